//===- runtime/cuda/CudaTransport.cpp - peer copies and NCCL ------------===//
//
// See CudaTransport.h for the protocol. Every event is created once, at
// construction, on the GPU it is recorded on; a step allocates nothing.
// NCCL pairs are issued as one ncclGroupStart/End send+recv by the receiving
// worker, under one lock, on per-GPU communication streams: every
// communication stream sees the pairs in the same global order, and each pair
// depends only on work issued before it, so the schedule cannot deadlock.
// Two logical devices on the same GPU always use cudaMemcpyAsync (one GPU
// cannot hold two ranks of a communicator).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaTransport.h"

#include "runtime/cuda/CudaCheck.h"

#ifdef MPC_HAVE_NCCL
#include <nccl.h>
#endif

#include <set>

namespace mpc::runtime::cuda {

namespace {

#ifdef MPC_HAVE_NCCL
void ncclCheck(ncclResult_t r, const char *what) {
  if (r != ncclSuccess)
    throw InternalError(std::string("nccl: ") + what + ": " + ncclGetErrorString(r));
}
#endif

/// Restores the calling thread's current GPU on scope exit.
class DeviceGuard {
public:
  DeviceGuard() { cudaGetDevice(&saved_); }
  ~DeviceGuard() { cudaSetDevice(saved_); }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int saved_ = 0;
};

cudaEvent_t makeEvent(int gpu) {
  cudaCheck(cudaSetDevice(gpu), "cudaSetDevice");
  cudaEvent_t e = nullptr;
  cudaCheck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

} // namespace

CudaTransport::CudaTransport(const plan::Plan &plan, std::vector<int> physical,
                             TransportKind kind, std::unique_ptr<Transport> host)
    : kind_(kind), physical_(std::move(physical)), host_(std::move(host)) {
  if (!host_) host_ = std::make_unique<ChannelTransport>(plan);
  DeviceGuard guard;
  std::set<int> ncclGpus;
  for (uint32_t d = 0; d < plan.devices.size(); ++d) {
    for (const plan::Instr &in : plan.devices[d].instrs) {
      if (in.kind != plan::InstrKind::Send || in.peer >= physical_.size()) continue;
      int ps = physical_[d], pr = physical_[in.peer];
      if (ps < 0 || pr < 0) continue; // a cpu end: host path
      auto c = std::make_unique<DeviceChannel>();
      c->sender = d;
      c->receiver = in.peer;
      c->physSender = ps;
      c->physReceiver = pr;
      c->useNccl = kind == TransportKind::Nccl && ps != pr;
      c->ready = makeEvent(ps);
      c->done = makeEvent(c->useNccl ? ps : pr);
      if (c->useNccl) {
        c->recvStart = makeEvent(pr);
        c->recvDone = makeEvent(pr);
        ncclGpus.insert(ps);
        ncclGpus.insert(pr);
      }
      channels_.emplace(in.channel, std::move(c));
    }
  }
  if (!ncclGpus.empty()) {
#ifdef MPC_HAVE_NCCL
    std::vector<int> devs(ncclGpus.begin(), ncclGpus.end());
    std::vector<ncclComm_t> comms(devs.size());
    ncclCheck(ncclCommInitAll(comms.data(), int(devs.size()), devs.data()), "ncclCommInitAll");
    for (size_t r = 0; r < devs.size(); ++r) {
      rankOf_[devs[r]] = int(r);
      comms_.push_back(comms[r]);
      cudaCheck(cudaSetDevice(devs[r]), "cudaSetDevice");
      cudaStream_t s = nullptr;
      cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      commStreams_.push_back(s);
    }
#else
    throw UserError("", "--transport", "this mpc was built without NCCL; use 'peer'");
#endif
  }
}

CudaTransport::~CudaTransport() {
  DeviceGuard guard;
  for (auto &[id, c] : channels_) {
    (void)id;
    for (cudaEvent_t e : {c->ready, c->done, c->recvStart, c->recvDone})
      if (e) cudaEventDestroy(e);
  }
  // Pending NCCL pairs finish before their communicators go away.
  for (cudaStream_t s : commStreams_) cudaStreamSynchronize(s);
  for (cudaStream_t s : commStreams_) cudaStreamDestroy(s);
#ifdef MPC_HAVE_NCCL
  for (void *comm : comms_) ncclCommDestroy(static_cast<ncclComm_t>(comm));
#endif
}

void CudaTransport::send(uint32_t channel, const void *src, size_t bytes) {
  host_->send(channel, src, bytes);
}

void CudaTransport::recv(uint32_t channel, void *dst, size_t bytes) {
  host_->recv(channel, dst, bytes);
}

void CudaTransport::close() {
  {
    std::lock_guard<std::mutex> lock(closeMutex_);
    closed_ = true;
  }
  host_->close();
  for (auto &[id, c] : channels_) {
    (void)id;
    std::lock_guard<std::mutex> lock(c->mutex);
    c->cv.notify_all();
  }
}

bool CudaTransport::closed() const {
  std::lock_guard<std::mutex> lock(closeMutex_);
  return closed_;
}

void CudaTransport::finishStep() { host_->finishStep(); }

bool CudaTransport::isDeviceChannel(uint32_t channel) const {
  return channels_.count(channel) != 0;
}

CudaTransport::DeviceChannel &CudaTransport::channel(uint32_t id) {
  auto it = channels_.find(id);
  MPC_ASSERT(it != channels_.end(), "no device channel " + std::to_string(id));
  return *it->second;
}

void CudaTransport::waitStagingFree(uint32_t id, cudaStream_t stream) {
  DeviceChannel &c = channel(id);
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.usedOnce) cudaCheck(cudaStreamWaitEvent(stream, c.done, 0), "cudaStreamWaitEvent");
}

void CudaTransport::postDevice(uint32_t id, const void *staging, size_t bytes,
                               cudaStream_t stream) {
  if (closed()) throw TransportClosed();
  DeviceChannel &c = channel(id);
  cudaCheck(cudaEventRecord(c.ready, stream), "cudaEventRecord");
  std::lock_guard<std::mutex> lock(c.mutex);
  c.staging = staging;
  c.bytes = bytes;
  ++c.posted;
  c.cv.notify_all();
}

void CudaTransport::recvDevice(uint32_t id, void *dst, size_t bytes, cudaStream_t stream) {
  DeviceChannel &c = channel(id);
  std::unique_lock<std::mutex> lock(c.mutex);
  c.cv.wait(lock, [&] { return c.posted > c.consumed || closed(); });
  if (c.posted == c.consumed) throw TransportClosed();
  if (c.bytes != bytes)
    throw InternalError("channel " + std::to_string(id) + " carries " + std::to_string(c.bytes) +
                        " bytes, the receiver expects " + std::to_string(bytes));
  ++c.consumed;
  if (c.useNccl) {
    ncclCopy(c, dst, stream);
  } else {
    cudaCheck(cudaStreamWaitEvent(stream, c.ready, 0), "cudaStreamWaitEvent");
    if (c.physSender == c.physReceiver)
      cudaCheck(cudaMemcpyAsync(dst, c.staging, bytes, cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpyAsync");
    else
      cudaCheck(cudaMemcpyPeerAsync(dst, c.physReceiver, c.staging, c.physSender, bytes, stream),
                "cudaMemcpyPeerAsync");
    cudaCheck(cudaEventRecord(c.done, stream), "cudaEventRecord");
  }
  c.usedOnce = true;
}

void CudaTransport::ncclCopy(DeviceChannel &c, void *dst, cudaStream_t stream) {
#ifdef MPC_HAVE_NCCL
  std::lock_guard<std::mutex> lock(ncclMutex_);
  DeviceGuard guard;
  int rs = rankOf_.at(c.physSender), rr = rankOf_.at(c.physReceiver);
  cudaStream_t sendStream = commStreams_[size_t(rs)], recvStream = commStreams_[size_t(rr)];
  cudaCheck(cudaSetDevice(c.physReceiver), "cudaSetDevice");
  cudaCheck(cudaEventRecord(c.recvStart, stream), "cudaEventRecord");
  cudaCheck(cudaStreamWaitEvent(recvStream, c.recvStart, 0), "cudaStreamWaitEvent");
  cudaCheck(cudaSetDevice(c.physSender), "cudaSetDevice");
  cudaCheck(cudaStreamWaitEvent(sendStream, c.ready, 0), "cudaStreamWaitEvent");
  ncclCheck(ncclGroupStart(), "ncclGroupStart");
  ncclCheck(ncclSend(c.staging, c.bytes, ncclUint8, rr, static_cast<ncclComm_t>(comms_[size_t(rs)]),
                     sendStream),
            "ncclSend");
  ncclCheck(ncclRecv(dst, c.bytes, ncclUint8, rs, static_cast<ncclComm_t>(comms_[size_t(rr)]),
                     recvStream),
            "ncclRecv");
  ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
  cudaCheck(cudaEventRecord(c.done, sendStream), "cudaEventRecord");
  cudaCheck(cudaSetDevice(c.physReceiver), "cudaSetDevice");
  cudaCheck(cudaEventRecord(c.recvDone, recvStream), "cudaEventRecord");
  cudaCheck(cudaStreamWaitEvent(stream, c.recvDone, 0), "cudaStreamWaitEvent");
#else
  (void)c;
  (void)dst;
  (void)stream;
  throw InternalError("nccl transport used in a build without NCCL");
#endif
}

} // namespace mpc::runtime::cuda
