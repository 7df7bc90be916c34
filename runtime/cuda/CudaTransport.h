//===- runtime/cuda/CudaTransport.h - moving data between GPUs ----------===//
//
// A Transport (runtime/Backend.h) that also moves device memory. For a
// channel between two GPU devices:
//   * the sender copies the value into its per-channel staging buffer on its
//     own stream (so its arena may be reused right away), records the
//     channel's `ready` event and posts the message; it never waits;
//   * the receiver waits on the host only until the message is *posted*
//     (queued, not computed), makes its stream wait on `ready` and enqueues
//     the copy into its own memory: cudaMemcpyPeerAsync between GPUs,
//     cudaMemcpyAsync within one GPU, or an ncclSend/ncclRecv pair;
//   * the copy records `done`; the sender's next write of the staging buffer
//     (the next step) waits on it.
// So devices wait for each other only where data flows, and only on the GPU.
// Channels with a cpu:N end use the host path (send/recv): an in-process
// ChannelTransport, or the transport given to the constructor (a job over
// MPI ranks passes the group's; see CudaJobTransport.h, which also
// overrides the device path for channels between ranks).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"
#include "runtime/Channel.h"
#include "runtime/cuda/CudaBackend.h"

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace mpc::runtime::cuda {

class CudaTransport : public Transport {
public:
  /// `physical`: the GPU of each device of `plan` (-1 for cpu devices and
  /// for devices this process does not host). `host` carries the host path
  /// (null: in-process channels).
  CudaTransport(const plan::Plan &plan, std::vector<int> physical, TransportKind kind,
                std::unique_ptr<Transport> host = nullptr);
  ~CudaTransport() override;
  CudaTransport(const CudaTransport &) = delete;
  CudaTransport &operator=(const CudaTransport &) = delete;

  // Host path (channels with a cpu end).
  void send(uint32_t channel, const void *src, size_t bytes) override;
  void recv(uint32_t channel, void *dst, size_t bytes) override;
  void close() override;
  bool closed() const override;
  /// The host transport's (a cross-process one completes its sends).
  void finishStep() override;

  // Device path. Virtual so that a job over several processes can carry
  // some channels another way (CudaJobTransport.h).

  /// True when both ends of `channel` are GPU devices (the device path).
  virtual bool isDeviceChannel(uint32_t channel) const;

  /// Sender: makes `stream` wait until the previous message of `channel` has
  /// been copied out of the staging buffer.
  virtual void waitStagingFree(uint32_t channel, cudaStream_t stream);
  /// Sender: `staging` (on the sender's GPU) holds the message once the work
  /// queued so far on `stream` is done; records `ready` and posts it.
  virtual void postDevice(uint32_t channel, const void *staging, size_t bytes,
                          cudaStream_t stream);
  /// Receiver: waits for the post and enqueues the copy into `dst` on
  /// `stream` (the receiver's). Throws TransportClosed once closed.
  virtual void recvDevice(uint32_t channel, void *dst, size_t bytes, cudaStream_t stream);

  TransportKind kind() const { return kind_; }

private:
  struct DeviceChannel {
    uint32_t sender = 0, receiver = 0;
    int physSender = 0, physReceiver = 0;
    cudaEvent_t ready = nullptr;     ///< on the sender's GPU
    cudaEvent_t done = nullptr;      ///< staging free again (sender's GPU for nccl)
    cudaEvent_t recvStart = nullptr; ///< nccl: receiver's stream position
    cudaEvent_t recvDone = nullptr;  ///< nccl: data arrived (receiver's GPU)
    bool useNccl = false;
    bool usedOnce = false;
    const void *staging = nullptr;
    size_t bytes = 0;
    uint64_t posted = 0, consumed = 0;
    std::mutex mutex;
    std::condition_variable cv;
  };
  DeviceChannel &channel(uint32_t id);
  void ncclCopy(DeviceChannel &c, void *dst, cudaStream_t stream);

  TransportKind kind_;
  std::vector<int> physical_;
  std::unique_ptr<Transport> host_;
  std::map<uint32_t, std::unique_ptr<DeviceChannel>> channels_;
  bool closed_ = false;
  mutable std::mutex closeMutex_;

  // NCCL: one communicator rank per distinct physical GPU in use.
  std::mutex ncclMutex_;
  std::map<int, int> rankOf_;           ///< physical GPU -> rank
  std::vector<void *> comms_;           ///< ncclComm_t by rank
  std::vector<cudaStream_t> commStreams_; ///< by rank
};

} // namespace mpc::runtime::cuda
