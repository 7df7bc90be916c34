//===- runtime/mpi/MpiTransport.h - sends and receives between ranks ----===//
//
// The Transport of a plan spread over the ranks of an MPI job. A channel
// whose two devices are hosted by this rank stays an in-process mailbox
// (runtime/Channel.h). A channel that leaves this rank is an MPI message on
// the transport's own communicator, matched by (source rank, tag), with the
// tag equal to the channel id. Channel ids are unique per send/recv pair of
// the plan, and a pipelined plan has one pair per edge and micro-batch, so
// the tag names both; MPI's non-overtaking rule keeps successive steps'
// messages of one channel in order.
//
// Threads: each device worker calls send/recv itself, which needs
// MPI_THREAD_MULTIPLE (checked when the job starts). That keeps a cross-rank
// transfer to one copy on each side, with no hand-off to a communication
// thread; OpenMPI's progress engine runs in whichever thread polls.
//
//   * send copies the bytes into a recycled per-channel buffer and posts
//     MPI_Isend; it never waits for the receiver (plans are checked
//     deadlock-free on that assumption). finishStep() waits for the step's
//     sends to complete, which bounds the buffers to one step's messages.
//   * recv posts MPI_Irecv straight into the destination and polls it
//     (briefly spinning, then yielding, then sleeping), so that close() —
//     another worker of this rank failed — wakes it with TransportClosed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/Backend.h"
#include "runtime/Channel.h"

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mpc::runtime::mpi {

class MpiTransport : public Transport {
public:
  /// `rankOf[d]`: the rank hosting device d. `comm` is the transport's own
  /// communicator (duplicated for it, with MPI_ERRORS_RETURN); not freed here.
  MpiTransport(const plan::Plan &plan, const std::vector<int> &rankOf, MPI_Comm comm);
  /// For tests: channels given directly as (channel, sender rank, receiver
  /// rank).
  struct Route {
    uint32_t channel;
    int from, to;
  };
  MpiTransport(const std::vector<Route> &routes, MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport &) = delete;
  MpiTransport &operator=(const MpiTransport &) = delete;

  void send(uint32_t channel, const void *src, size_t bytes) override;
  void recv(uint32_t channel, void *dst, size_t bytes) override;
  void close() override;
  bool closed() const override { return closed_.load(); }
  void finishStep() override;

private:
  struct Message {
    std::vector<uint8_t> bytes;
    std::vector<MPI_Request> requests;
  };
  struct Outgoing {
    int peer = 0;
    std::mutex mutex;
    std::vector<Message> inFlight;
    std::vector<std::vector<uint8_t>> spare; ///< buffers of completed sends
  };
  /// `localIdleLimit`: the bound of the local channels' buffer pool.
  void setUp(const std::vector<Route> &routes, size_t localIdleLimit);
  /// Polls `requests` until all completed; throws TransportClosed if the
  /// transport closes first (cancelling what is still pending).
  void waitAll(std::vector<MPI_Request> &requests, std::vector<MPI_Status> *statuses,
               uint32_t channel);
  void reapCompleted(Outgoing &out);

  MPI_Comm comm_;
  int rank_ = 0;
  std::unique_ptr<ChannelTransport> local_;
  std::unordered_map<uint32_t, bool> isLocal_;
  std::unordered_map<uint32_t, std::unique_ptr<Outgoing>> outgoing_;
  std::unordered_map<uint32_t, int> incoming_; ///< channel -> sending rank
  std::atomic<bool> closed_{false};
};

} // namespace mpc::runtime::mpi
