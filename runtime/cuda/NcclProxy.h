//===- runtime/cuda/NcclProxy.h - GPU transfers between ranks -----------===//
//
// Moves the messages of the channels between GPU devices hosted by
// different ranks with ncclSend/ncclRecv on the job's communicator
// (NcclBootstrap.h). One proxy thread per process issues all of this
// rank's NCCL operations, on one communication stream per hosted gpu
// device, in the global transfer order (TransferOrder.h) that every rank
// computes alike, so the two ends of every pair of ranks issue their
// operations in the same order.
//
// Per channel and step:
//   sender  worker: copies the value into its staging buffer on its stream
//                   (after waitStagingFree), records `ready`, posts; never
//                   waits on the host.
//           proxy:  waits (host) for the post, makes the comm stream wait on
//                   `ready`, ncclSend from the staging buffer, records `done`
//                   (the sender's next write of the staging waits on it).
//   receiver worker: asks for the message and waits (host) until the
//                   receive is issued.
//           proxy:  waits (host) for the request (the worker has copied the
//                   previous message out by then), makes the comm stream
//                   wait on `copied`, ncclRecv into the channel's receive
//                   buffer, records `arrived`.
//           worker: makes its stream wait on `arrived`, copies into its own
//                   memory and records `copied`.
// Both ends of an operation wait only for their worker to reach the
// instruction, which depends only on transfers earlier in the order.
// finishStep() waits until the step's sends are issued, so no event or
// staging buffer of a step is touched by the next before the proxy used it.
//
// Errors: the proxy polls ncclCommGetAsyncError while it waits; an error
// (or a failed CUDA/NCCL call) is stored and rethrown by the next worker
// call and by finishStep. close() wakes the proxy and every waiting worker.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/TransferOrder.h"

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace mpc::runtime::cuda {

class NcclProxy {
public:
  /// One gpu device this process hosts, in the job's communicator.
  struct Member {
    int gpu = 0;          ///< physical GPU
    void *comm = nullptr; ///< its ncclComm_t (the proxy destroys it)
  };
  /// `ops`: this rank's operations of one step, in order (proxyOps).
  /// `members`: by device index. `ncclRankOf[d]`: NCCL rank of device d.
  NcclProxy(std::vector<ProxyOp> ops, std::map<uint32_t, Member> members,
            std::vector<int> ncclRankOf, int rank);
  ~NcclProxy();
  NcclProxy(const NcclProxy &) = delete;
  NcclProxy &operator=(const NcclProxy &) = delete;

  /// True when `channel` is one of this rank's NCCL channels.
  bool carries(uint32_t channel) const { return byChannel_.count(channel) != 0; }

  // Sender worker.
  void waitStagingFree(uint32_t channel, cudaStream_t stream);
  void post(uint32_t channel, const void *staging, size_t bytes, cudaStream_t stream);
  // Receiver worker.
  void recv(uint32_t channel, void *dst, size_t bytes, cudaStream_t stream);

  /// Waits until every send posted so far has been issued.
  void finishStep();
  void close();

private:
  struct Link {
    ProxyOp op;
    int gpu = 0;      ///< of this rank's end
    int peer = 0;     ///< NCCL rank of the other end
    void *comm = nullptr;
    cudaStream_t commStream = nullptr;
    cudaEvent_t posted = nullptr;   ///< send: `ready`; recv: `arrived`
    cudaEvent_t released = nullptr; ///< send: `done`; recv: `copied`
    void *buffer = nullptr;         ///< recv: the receive buffer
    const void *staging = nullptr;  ///< send: the worker's staging buffer
    uint64_t offered = 0;  ///< send: messages posted by the worker
    uint64_t issued = 0;   ///< NCCL operations issued
    uint64_t requested = 0; ///< recv: messages the worker asked for
    uint64_t consumed = 0;  ///< recv: messages copied out by the worker
  };
  Link &link(uint32_t channel);
  void loop();
  void issue(Link &l);
  /// Waits on cv_ until `ready()` and returns true. Rethrows a stored
  /// error. Once closed: the proxy gets false, a worker TransportClosed.
  /// The proxy polls NCCL for asynchronous errors while it waits.
  template <class Pred>
  bool waitFor(std::unique_lock<std::mutex> &lock, Pred ready, bool proxy);
  void checkAsyncErrors();

  int rank_;
  std::vector<Link> links_; ///< in issue order
  std::unordered_map<uint32_t, size_t> byChannel_;
  std::map<uint32_t, Member> members_;
  std::map<uint32_t, cudaStream_t> streams_; ///< by device index

  std::mutex mutex_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

} // namespace mpc::runtime::cuda
