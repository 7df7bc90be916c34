//===- runtime/cuda/NcclProxy.cpp - GPU transfers between ranks ---------===//
//
// See NcclProxy.h for the protocol. Everything a step uses (events, receive
// buffers, streams) is made at construction; the proxy thread lives as long
// as the transport and walks its operation list once per step.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/NcclProxy.h"

#include "runtime/Backend.h"
#include "runtime/cuda/CudaCheck.h"
#include "support/Error.h"

#ifdef MPC_HAVE_NCCL
#include <nccl.h>
#endif

#include <chrono>

namespace mpc::runtime::cuda {

namespace {

// How often a waiting proxy asks NCCL for asynchronous errors (a peer that
// failed, a network error); waits end at once when the awaited event comes.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

#ifdef MPC_HAVE_NCCL
void ncclCall(ncclResult_t r, const char *what) {
  if (r != ncclSuccess)
    throw InternalError(std::string("nccl: ") + what + ": " + ncclGetErrorString(r));
}
#endif

void sendBytes(const void *src, size_t bytes, int peer, void *comm, cudaStream_t stream) {
#ifdef MPC_HAVE_NCCL
  ncclCall(ncclSend(src, bytes, ncclUint8, peer, static_cast<ncclComm_t>(comm), stream),
           "ncclSend");
#else
  (void)src, (void)bytes, (void)peer, (void)comm, (void)stream;
  throw InternalError("NCCL transfer in a build without NCCL");
#endif
}

void recvBytes(void *dst, size_t bytes, int peer, void *comm, cudaStream_t stream) {
#ifdef MPC_HAVE_NCCL
  ncclCall(ncclRecv(dst, bytes, ncclUint8, peer, static_cast<ncclComm_t>(comm), stream),
           "ncclRecv");
#else
  (void)dst, (void)bytes, (void)peer, (void)comm, (void)stream;
  throw InternalError("NCCL transfer in a build without NCCL");
#endif
}

/// An asynchronous error of `comm`, or an empty string.
std::string asyncError(void *comm) {
#ifdef MPC_HAVE_NCCL
  ncclResult_t state = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(static_cast<ncclComm_t>(comm), &state);
  if (r != ncclSuccess) return ncclGetErrorString(r);
  if (state != ncclSuccess && state != ncclInProgress) return ncclGetErrorString(state);
#else
  (void)comm;
#endif
  return "";
}

/// Destroys `comm`; aborts it instead when operations may never complete.
void endComm(void *comm, bool abort) {
#ifdef MPC_HAVE_NCCL
  if (abort) ncclCommAbort(static_cast<ncclComm_t>(comm));
  else ncclCommDestroy(static_cast<ncclComm_t>(comm));
#else
  (void)comm, (void)abort;
#endif
}

cudaEvent_t makeEvent() {
  cudaEvent_t e = nullptr;
  cudaCheck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

} // namespace

NcclProxy::NcclProxy(std::vector<ProxyOp> ops, std::map<uint32_t, Member> members,
                     std::vector<int> ncclRankOf, int rank)
    : rank_(rank), members_(std::move(members)) {
  int saved = 0;
  cudaGetDevice(&saved);
  for (auto &[device, m] : members_) {
    cudaCheck(cudaSetDevice(m.gpu), "cudaSetDevice");
    cudaStream_t s = nullptr;
    cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    streams_[device] = s;
  }
  links_.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Link &l = links_[i];
    l.op = ops[i];
    uint32_t here = l.op.send ? l.op.transfer.sender : l.op.transfer.receiver;
    uint32_t there = l.op.send ? l.op.transfer.receiver : l.op.transfer.sender;
    auto m = members_.find(here);
    MPC_ASSERT(m != members_.end(), "NCCL operation of a device this rank does not host");
    MPC_ASSERT(there < ncclRankOf.size() && ncclRankOf[there] >= 0,
               "NCCL operation with a device outside the communicator");
    l.gpu = m->second.gpu;
    l.comm = m->second.comm;
    l.peer = ncclRankOf[there];
    l.commStream = streams_.at(here);
    cudaCheck(cudaSetDevice(l.gpu), "cudaSetDevice");
    l.posted = makeEvent();
    l.released = makeEvent();
    if (!l.op.send && l.op.transfer.bytes) {
      cudaError_t status = cudaMalloc(&l.buffer, l.op.transfer.bytes);
      if (status != cudaSuccess) {
        cudaGetLastError();
        throw UserError("", "", "cannot allocate the " +
                                    std::to_string(l.op.transfer.bytes) +
                                    "-byte receive buffer of channel " +
                                    std::to_string(l.op.transfer.channel) + " on GPU " +
                                    std::to_string(l.gpu) + ": " + cudaGetErrorString(status));
      }
    }
    bool fresh = byChannel_.emplace(l.op.transfer.channel, i).second;
    MPC_ASSERT(fresh, "channel " + std::to_string(l.op.transfer.channel) + " listed twice");
  }
  cudaSetDevice(saved);
  thread_ = std::thread([this] { loop(); });
}

NcclProxy::~NcclProxy() {
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    failed = closed_ || error_ != nullptr;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Issued operations finish before their buffers and communicators go;
  // after a failure they may never finish, so the communicators are aborted.
  for (auto &[device, s] : streams_) {
    cudaSetDevice(members_.at(device).gpu);
    if (!failed) cudaStreamSynchronize(s);
  }
  for (auto &[device, m] : members_) {
    (void)device;
    if (m.comm) endComm(m.comm, failed); // null once aborted by the proxy
  }
  for (Link &l : links_) {
    cudaSetDevice(l.gpu);
    if (l.posted) cudaEventDestroy(l.posted);
    if (l.released) cudaEventDestroy(l.released);
    if (l.buffer) cudaFree(l.buffer);
  }
  for (auto &[device, s] : streams_) {
    cudaSetDevice(members_.at(device).gpu);
    cudaStreamDestroy(s);
  }
  cudaGetLastError();
}

NcclProxy::Link &NcclProxy::link(uint32_t channel) {
  auto it = byChannel_.find(channel);
  MPC_ASSERT(it != byChannel_.end(), "channel " + std::to_string(channel) + " is not NCCL's");
  return links_[it->second];
}

void NcclProxy::checkAsyncErrors() {
  // With nothing of ours in flight an error cannot touch our data: a peer
  // that finished the run and destroyed its communicator may look like a
  // failure to NCCL. An operation issued later on a broken communicator
  // fails itself, or keeps its stream busy until the next poll.
  bool busy = false;
  for (auto &[device, s] : streams_) {
    (void)device;
    busy |= cudaStreamQuery(s) == cudaErrorNotReady;
  }
  cudaGetLastError();
  if (!busy) return;
  for (auto &[device, m] : members_) {
    (void)device;
    std::string e = m.comm ? asyncError(m.comm) : "";
    if (e.empty()) continue;
    // Aborting the communicators ends NCCL kernels that would never finish,
    // so host threads waiting on their streams return.
    for (auto &[d, other] : members_) {
      (void)d;
      endComm(other.comm, /*abort=*/true);
      other.comm = nullptr;
    }
    throw UserError("", "", "NCCL reports an error: " + e +
                                  " (another rank may have failed; NCCL_DEBUG=WARN says more)");
  }
}

template <class Pred>
bool NcclProxy::waitFor(std::unique_lock<std::mutex> &lock, Pred ready, bool proxy) {
  for (;;) {
    if (error_) std::rethrow_exception(error_);
    if (closed_ || stop_) {
      if (proxy) return false;
      throw TransportClosed();
    }
    if (ready()) return true;
    if (!proxy) {
      cv_.wait(lock);
      continue;
    }
    // Only the proxy polls NCCL: its waits span the whole step.
    if (cv_.wait_for(lock, kPollInterval) == std::cv_status::timeout) checkAsyncErrors();
  }
}

void NcclProxy::loop() {
  try {
    if (links_.empty()) {
      // A member of the communicator without transfers of its own: it only
      // watches for errors until the transport goes.
      std::unique_lock<std::mutex> lock(mutex_);
      waitFor(lock, [] { return false; }, /*proxy=*/true);
      return;
    }
    for (;;)
      for (Link &l : links_) {
        std::unique_lock<std::mutex> lock(mutex_);
        bool go = waitFor(
            lock, [&] { return l.op.send ? l.offered > l.issued : l.requested > l.issued; },
            /*proxy=*/true);
        if (!go) return;
        lock.unlock();
        issue(l);
        lock.lock();
        ++l.issued;
        cv_.notify_all();
      }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
    cv_.notify_all();
  }
}

void NcclProxy::issue(Link &l) {
  // Both ends know the size from the plan, so both skip empty messages.
  size_t bytes = l.op.transfer.bytes;
  cudaCheck(cudaSetDevice(l.gpu), "cudaSetDevice");
  if (l.op.send) {
    cudaCheck(cudaStreamWaitEvent(l.commStream, l.posted, 0), "cudaStreamWaitEvent");
    if (bytes) sendBytes(l.staging, bytes, l.peer, l.comm, l.commStream);
  } else {
    if (l.issued > 0)
      cudaCheck(cudaStreamWaitEvent(l.commStream, l.released, 0), "cudaStreamWaitEvent");
    if (bytes) recvBytes(l.buffer, bytes, l.peer, l.comm, l.commStream);
  }
  // send: `done`, the staging buffer is free; recv: `arrived`.
  cudaCheck(cudaEventRecord(l.op.send ? l.released : l.posted, l.commStream), "cudaEventRecord");
}

void NcclProxy::waitStagingFree(uint32_t channel, cudaStream_t stream) {
  Link &l = link(channel);
  std::unique_lock<std::mutex> lock(mutex_);
  // finishStep already waited for the previous send, so this returns at once.
  waitFor(lock, [&] { return l.issued == l.offered; }, false);
  if (l.issued > 0) cudaCheck(cudaStreamWaitEvent(stream, l.released, 0), "cudaStreamWaitEvent");
}

void NcclProxy::post(uint32_t channel, const void *staging, size_t bytes, cudaStream_t stream) {
  Link &l = link(channel);
  if (bytes != l.op.transfer.bytes)
    throw InternalError("channel " + std::to_string(channel) + " carries " +
                        std::to_string(bytes) + " bytes, the receiver expects " +
                        std::to_string(l.op.transfer.bytes));
  std::unique_lock<std::mutex> lock(mutex_);
  waitFor(lock, [] { return true; }, false); // throws once closed or failed
  cudaCheck(cudaEventRecord(l.posted, stream), "cudaEventRecord");
  l.staging = staging;
  ++l.offered;
  cv_.notify_all();
}

void NcclProxy::recv(uint32_t channel, void *dst, size_t bytes, cudaStream_t stream) {
  Link &l = link(channel);
  if (bytes != l.op.transfer.bytes)
    throw InternalError("channel " + std::to_string(channel) + " carries " +
                        std::to_string(l.op.transfer.bytes) + " bytes, the receiver expects " +
                        std::to_string(bytes));
  std::unique_lock<std::mutex> lock(mutex_);
  // Asking for the message lets the proxy issue its receive: a receive
  // issued ahead of the worker could belong to a step that never comes, and
  // nothing would ever match it.
  ++l.requested;
  cv_.notify_all();
  waitFor(lock, [&] { return l.issued > l.consumed; }, false);
  // The proxy records `arrived` again only after `consumed` moves.
  cudaCheck(cudaStreamWaitEvent(stream, l.posted, 0), "cudaStreamWaitEvent");
  if (bytes)
    cudaCheck(cudaMemcpyAsync(dst, l.buffer, bytes, cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync");
  cudaCheck(cudaEventRecord(l.released, stream), "cudaEventRecord");
  ++l.consumed;
  cv_.notify_all();
}

void NcclProxy::finishStep() {
  std::unique_lock<std::mutex> lock(mutex_);
  waitFor(lock, [&] {
    for (const Link &l : links_)
      if (l.op.send && l.issued != l.offered) return false;
    return true;
  }, false);
}

void NcclProxy::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

} // namespace mpc::runtime::cuda
