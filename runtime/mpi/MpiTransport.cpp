//===- runtime/mpi/MpiTransport.cpp - sends and receives between ranks --===//
#include "runtime/mpi/MpiTransport.h"

#include "plan/TransferWalk.h"
#include "runtime/mpi/MpiCheck.h"
#include "support/Error.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

namespace mpc::runtime::mpi {

namespace {

/// Waiting for a message without burning a core that a device worker of an
/// oversubscribed host needs: spin briefly (latency), then yield, then
/// sleep.
void pause(unsigned spins) {
  if (spins < 64) return;
  if (spins < 2048) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(spins < 8192 ? 20 : 200));
}

int tagUpperBound(MPI_Comm comm) {
  int *ub = nullptr, flag = 0;
  mpiCheck(MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag), "MPI_Comm_get_attr(MPI_TAG_UB)");
  return flag && ub ? *ub : 32767;
}

} // namespace

MpiTransport::MpiTransport(const plan::Plan &plan, const std::vector<int> &rankOf, MPI_Comm comm)
    : comm_(comm) {
  // Send/recv pairs and collectives' messages alike (plan::channelRoutes).
  std::vector<Route> list;
  for (const plan::ChannelRoute &r : plan::channelRoutes(plan))
    list.push_back(Route{r.channel, rankOf[r.from], rankOf[r.to]});
  // The local channels' buffers are bounded as a one-process run's are
  // (over the whole plan: an upper bound for this rank's share).
  plan::TransferWalk walk = plan::walkTransfers(plan);
  setUp(list, size_t(std::max(walk.peakBytesInFlight, walk.largestMessage)));
}

MpiTransport::MpiTransport(const std::vector<Route> &routes, MPI_Comm comm) : comm_(comm) {
  setUp(routes, ChannelTransport::kDefaultIdleLimit);
}

void MpiTransport::setUp(const std::vector<Route> &routes, size_t localIdleLimit) {
  mpiCheck(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  const int tagUb = tagUpperBound(comm_);
  std::vector<uint32_t> local;
  for (const Route &r : routes) {
    if (r.from != rank_ && r.to != rank_) continue;
    if (r.from == rank_ && r.to == rank_) {
      local.push_back(r.channel);
      isLocal_[r.channel] = true;
      continue;
    }
    if (r.channel > uint32_t(tagUb))
      throw UserError("", "channel " + std::to_string(r.channel),
                      "the plan's channel ids exceed this MPI library's largest tag (MPI_TAG_UB = " +
                          std::to_string(tagUb) + ")");
    isLocal_[r.channel] = false;
    if (r.from == rank_) {
      auto out = std::make_unique<Outgoing>();
      out->peer = r.to;
      outgoing_[r.channel] = std::move(out);
    } else {
      incoming_[r.channel] = r.from;
    }
  }
  local_ = std::make_unique<ChannelTransport>(local, localIdleLimit);
}

MpiTransport::~MpiTransport() {
  // Only a failed run gets here with messages in flight, and the job is
  // being ended: let MPI finish or drop them on its own time. Their buffers
  // are left alive on purpose (MPI may still read them).
  for (auto &[id, out] : outgoing_)
    for (Message &m : out->inFlight) {
      for (MPI_Request &r : m.requests)
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
      new std::vector<uint8_t>(std::move(m.bytes));
    }
}

void MpiTransport::waitAll(std::vector<MPI_Request> &requests, std::vector<MPI_Status> *statuses,
                           uint32_t channel) {
  std::vector<MPI_Status> local(requests.size());
  std::vector<MPI_Status> &st = statuses ? *statuses : local;
  st.resize(requests.size());
  for (unsigned spins = 0;; ++spins) {
    int done = 0;
    int rc = MPI_Testall(int(requests.size()), requests.data(), &done, st.data());
    if (rc != MPI_SUCCESS) {
      int code = rc;
      if (rc == MPI_ERR_IN_STATUS)
        for (const MPI_Status &s : st)
          if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) code = s.MPI_ERROR;
      mpiCheck(code, "MPI transfer on channel " + std::to_string(channel));
    }
    if (done) return;
    if (closed_) {
      for (MPI_Request &r : requests)
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Request_free(&r);
        }
      throw TransportClosed();
    }
    pause(spins);
  }
}

void MpiTransport::reapCompleted(Outgoing &out) {
  for (size_t i = 0; i < out.inFlight.size();) {
    Message &m = out.inFlight[i];
    int done = 0;
    mpiCheck(MPI_Testall(int(m.requests.size()), m.requests.data(), &done, MPI_STATUSES_IGNORE),
             "MPI_Testall");
    if (!done) {
      ++i;
      continue;
    }
    out.spare.push_back(std::move(m.bytes));
    out.inFlight.erase(out.inFlight.begin() + std::ptrdiff_t(i));
  }
}

void MpiTransport::send(uint32_t channel, const void *src, size_t bytes) {
  if (closed_) throw TransportClosed();
  auto it = isLocal_.find(channel);
  MPC_ASSERT(it != isLocal_.end(), "channel " + std::to_string(channel) + " is not this rank's");
  if (it->second) return local_->send(channel, src, bytes);
  auto o = outgoing_.find(channel);
  MPC_ASSERT(o != outgoing_.end(), "send on channel " + std::to_string(channel) +
                                        ", which this rank receives");
  Outgoing &out = *o->second;
  std::lock_guard<std::mutex> lock(out.mutex);
  reapCompleted(out);
  Message m;
  if (!out.spare.empty()) {
    m.bytes = std::move(out.spare.back());
    out.spare.pop_back();
  }
  m.bytes.resize(bytes);
  if (bytes) std::memcpy(m.bytes.data(), src, bytes);
  m.requests.assign(chunkCount(bytes), MPI_REQUEST_NULL);
  forEachChunk(bytes, [&](size_t c, size_t off, size_t n) {
    mpiCheck(MPI_Isend(m.bytes.data() + off, int(n), MPI_BYTE, out.peer, int(channel), comm_,
                       &m.requests[c]),
             "MPI_Isend on channel " + std::to_string(channel));
  });
  out.inFlight.push_back(std::move(m));
}

void MpiTransport::recv(uint32_t channel, void *dst, size_t bytes) {
  if (closed_) throw TransportClosed();
  auto it = isLocal_.find(channel);
  MPC_ASSERT(it != isLocal_.end(), "channel " + std::to_string(channel) + " is not this rank's");
  if (it->second) return local_->recv(channel, dst, bytes);
  auto in = incoming_.find(channel);
  MPC_ASSERT(in != incoming_.end(), "receive on channel " + std::to_string(channel) +
                                        ", which this rank sends");
  std::vector<MPI_Request> requests(chunkCount(bytes), MPI_REQUEST_NULL);
  forEachChunk(bytes, [&](size_t c, size_t off, size_t n) {
    mpiCheck(MPI_Irecv(static_cast<uint8_t *>(dst) + off, int(n), MPI_BYTE, in->second,
                       int(channel), comm_, &requests[c]),
             "MPI_Irecv on channel " + std::to_string(channel));
  });
  std::vector<MPI_Status> statuses;
  waitAll(requests, &statuses, channel);
  size_t got = 0;
  for (MPI_Status &s : statuses) {
    int n = 0;
    mpiCheck(MPI_Get_count(&s, MPI_BYTE, &n), "MPI_Get_count");
    got += size_t(n);
  }
  MPC_ASSERT(got == bytes, "channel " + std::to_string(channel) + " message of " +
                               std::to_string(got) + " bytes received into a buffer of " +
                               std::to_string(bytes));
}

void MpiTransport::close() {
  closed_ = true;
  local_->close();
}

void MpiTransport::finishStep() {
  for (auto &[id, out] : outgoing_) {
    std::lock_guard<std::mutex> lock(out->mutex);
    for (Message &m : out->inFlight) {
      waitAll(m.requests, nullptr, id);
      out->spare.push_back(std::move(m.bytes));
    }
    out->inFlight.clear();
  }
}

} // namespace mpc::runtime::mpi
