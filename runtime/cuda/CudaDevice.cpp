//===- runtime/cuda/CudaDevice.cpp - the backend of one logical GPU -----===//
//
// Load does all the allocation and resolution a plan needs; a step then
// only enqueues kernels, cuBLAS calls and copies on the device's stream.
// Sends copy into a per-channel staging buffer on the sender's stream, so
// the sender's arena can be reused at once while the receiver copies at its
// own pace (see CudaTransport.h). Channels to cpu devices, or a transport
// that is not a CudaTransport, take the host path through pinned buffers and
// a stream synchronisation.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"

#include "plan/PlanIO.h"
#include "runtime/Strides.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaTransport.h"
#include "runtime/cuda/kernels/Convert.h"
#include "support/Error.h"

#include <cstring>
#include <tuple>

namespace mpc::runtime::cuda {

namespace {

constexpr uint64_t kAlign = 256;
constexpr uint64_t kCublasWorkspace = uint64_t(32) << 20; // cuBLAS's advice for Hopper

uint64_t alignUp(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

static_assert(sizeof(DataError) <= kAlign, "the DataError record must fit its slot");

/// What instruction `in` found: index `value` outside [0, bound) at flat
/// position `position` of the operand holding the indices (the labels of the
/// cross-entropy ops, the ids of the embedding ops), worded as the CPU
/// runtime words it. `saturated`: the position is 2^32 - 1 or later.
std::string badIndexMessage(const plan::Instr &in, const std::vector<plan::Buffer> &bufs,
                            int32_t value, int64_t position, bool saturated, int64_t bound) {
  std::string range = "out of range [0, " + std::to_string(bound) + ")";
  std::string v = std::to_string(value);
  std::string at = saturated ? " or later" : "";
  if (in.op.rfind("softmax_cross_entropy", 0) == 0)
    return "label " + v + " " + range + " at row " + std::to_string(position) + at;
  if (in.op.rfind("embedding", 0) == 0) {
    const plan::Buffer &ids = bufs[in.inputs[0]];
    std::string where = saturated ? " at flat position " + std::to_string(position) + at
                                  : " at ids" + plan::shapeText(unravelIndex(position, ids.shape));
    return "embedding id " + v + where + " " + range;
  }
  return "index " + v + " " + range + " at position " + std::to_string(position) + at;
}

} // namespace

CudaBackend::CudaBackend(int physicalGpu, const CudaOptions &options,
                         std::shared_ptr<CudaRunInfo> info)
    : gpu_(physicalGpu), options_(options), info_(std::move(info)) {}

CudaBackend::~CudaBackend() {
  if (cudaSetDevice(gpu_) != cudaSuccess) return;
  if (stream_) cudaStreamSynchronize(stream_);
  for (void *p : pinned_)
    if (p) cudaFreeHost(p);
  for (void *p : uploadPinned_)
    if (p) cudaFreeHost(p);
  for (cudaEvent_t e : uploadEvents_)
    if (e) cudaEventDestroy(e);
  for (cudaEvent_t e : traceEvents_) cudaEventDestroy(e);
  if (traceRef_) cudaEventDestroy(traceRef_);
  if (timeStart_) cudaEventDestroy(timeStart_);
  if (timeEnd_) cudaEventDestroy(timeEnd_);
  if (cublas_) cublasDestroy(cublas_);
  if (block_) cudaFree(block_);
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

std::string CudaBackend::where(size_t instr) const {
  return deviceName_ + ": instruction " + std::to_string(instr);
}

std::string CudaBackend::whereKernel(size_t instr) const {
  const plan::Instr &in = program_->instrs[instr];
  return where(instr) + " (" + in.op + " '" + in.node + "')";
}

void CudaBackend::load(const plan::Plan &plan, uint32_t device) {
  const plan::DeviceProgram &prog = plan.devices.at(device);
  program_ = &prog;
  deviceName_ = prog.device;
  cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
  cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasCheck(cublasCreate(&cublas_), "cublasCreate");
  cublasCheck(cublasSetStream(cublas_, stream_), "cublasSetStream");
  // TF32 when asked at run time (--allow-tf32) or compiled in
  // (--precision=tf32).
  const bool tf32 = options_.allowTf32 || plan.precision == "tf32";
  cublasCheck(cublasSetMathMode(cublas_, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
              "cublasSetMathMode");
  cudaCheck(cudaEventCreate(&timeStart_), "cudaEventCreate");
  cudaCheck(cudaEventCreate(&timeEnd_), "cudaEventCreate");

  const std::vector<plan::Buffer> &bufs = prog.buffers;
  // Buffer ids, sizes and bounds, and a send's one operand, were proven by
  // plan::verifyPlan; they are not re-checked here.

  // Layout of the device block.
  uint64_t persistentAt = 0;
  uint64_t arenaAt = alignUp(prog.persistentBytes);
  uint64_t stagingAt = arenaAt + alignUp(prog.arenaBytes);
  uint64_t stagingBytes = 0;
  std::vector<uint64_t> stagingOffset(prog.instrs.size(), UINT64_MAX);
  int64_t scratchFloats = 0;
  // f32 copies of a kernel's bf16 and f16 buffers (every kernel but the
  // lowPrecisionNative ones is written over f32): one region, sized for the
  // instruction that needs the most, as the device runs one instruction at
  // a time.
  uint64_t lowStagingBytes = 0;
  auto lowStaged = [&](const plan::Instr &in, const CudaKernel *k) {
    uint64_t need = 0;
    if (!k || k->lowPrecisionNative) return need;
    for (uint32_t id : in.inputs)
      if (ops::isLowPrecision(bufs[id].dtype)) need += alignUp(uint64_t(bufs[id].numElements()) * 4);
    if (ops::isLowPrecision(bufs[in.output].dtype))
      need += alignUp(uint64_t(bufs[in.output].numElements()) * 4);
    return need;
  };
  bool anyMatmul = false;
  for (size_t i = 0; i < prog.instrs.size(); ++i) {
    const plan::Instr &in = prog.instrs[i];
    if (in.kind == plan::InstrKind::Send) {
      const plan::Buffer &b = bufs[in.inputs[0]];
      stagingOffset[i] = stagingBytes;
      stagingBytes += alignUp(b.bytes);
    } else if (in.kind == plan::InstrKind::Kernel) {
      // The ops that run cuBLAS GEMMs: matmul, and conv2d's im2col products.
      anyMatmul |= in.op == "matmul" || in.op == "conv2d" || in.op == "conv2d_grad_input" ||
                   in.op == "conv2d_grad_weight";
      const CudaKernel *k = cudaKernels().find(in.op);
      lowStagingBytes = std::max(lowStagingBytes, lowStaged(in, k));
      if (k && k->scratchFloats) {
        KernelOperands ops;
        ops.instr = &in;
        for (uint32_t id : in.inputs) ops.inputs.push_back(&bufs[id]);
        ops.output = &bufs[in.output];
        try {
          scratchFloats = std::max(scratchFloats, k->scratchFloats(ops));
        } catch (const RuleError &e) {
          throw UserError("", whereKernel(i), e.what());
        }
      }
    }
  }
  uint64_t lowStagingAt = stagingAt + alignUp(stagingBytes);
  uint64_t scratchAt = lowStagingAt + lowStagingBytes;
  uint64_t workspaceAt = scratchAt + alignUp(uint64_t(scratchFloats) * 4);
  uint64_t workspaceBytes = anyMatmul ? kCublasWorkspace : 0;
  uint64_t flagAt = workspaceAt + workspaceBytes;
  uint64_t total = flagAt + kAlign;

  cudaError_t status = cudaMalloc(&block_, total);
  if (status != cudaSuccess) {
    cudaGetLastError();
    block_ = nullptr;
    throw UserError("", deviceName_,
                    "cannot allocate " + std::to_string(total) + " bytes on GPU " +
                        std::to_string(gpu_) + ": " + cudaGetErrorString(status));
  }
  // On the device's own stream: a plain cudaMemset would run on the legacy
  // stream, which does not order with non-blocking streams.
  cudaCheck(cudaMemsetAsync(block_, 0, total, stream_), "cudaMemsetAsync");
  char *base = static_cast<char *>(block_);
  dataError_ = reinterpret_cast<DataError *>(base + flagAt);
  if (workspaceBytes)
    cublasCheck(cublasSetWorkspace(cublas_, base + workspaceAt, workspaceBytes),
                "cublasSetWorkspace");

  ptrs_.assign(bufs.size(), nullptr);
  buffers_.clear();
  for (size_t i = 0; i < bufs.size(); ++i) {
    const plan::Buffer &b = bufs[i];
    bool persistent = b.region == plan::Region::Persistent;
    ptrs_[i] = base + (persistent ? persistentAt : arenaAt) + b.offset;
    buffers_.push_back(&b);
  }
  uploadPinned_.assign(bufs.size(), nullptr);
  uploadEvents_.assign(bufs.size(), nullptr);
  uploadCount_.assign(bufs.size(), 0);
  pinned_.assign(prog.instrs.size(), nullptr);

  KernelContext ctx{stream_, cublas_, reinterpret_cast<float *>(base + scratchAt),
                    DataErrorSink{dataError_, 0}, plan.seed};
  actions_.clear();
  shadowBuffers_.clear();
  for (size_t i = 0; i < prog.instrs.size(); ++i) {
    const plan::Instr &in = prog.instrs[i];
    Action a;
    a.kind = in.kind;
    a.channel = in.channel;
    switch (in.kind) {
    case plan::InstrKind::Kernel: {
      std::string at = whereKernel(i);
      const CudaKernel *k = cudaKernels().find(in.op);
      if (!k)
        throw UserError("", at, missingKernelMessage(in.op, "cuda", cudaKernels().names()));
      KernelOperands ops;
      ops.instr = &in;
      ops.ctx = ctx;
      ops.ctx.dataError.instr = int(i);
      const bool native = k->lowPrecisionNative;
      // A bf16 or f16 buffer of a kernel written over f32: the kernel sees
      // an f32 copy in the low-precision staging region (widened before
      // it, the result rounded back after it).
      struct Convert {
        void *from;
        ops::DType fromType;
        void *to;
        ops::DType toType;
        int64_t n;
      };
      std::vector<Convert> widen, narrow;
      uint64_t lowAt = lowStagingAt;
      auto stage = [&](uint32_t id, std::vector<Convert> &list, bool in) -> std::pair<const plan::Buffer *, void *> {
        const plan::Buffer &b = bufs[id];
        if (!ops::isLowPrecision(b.dtype) || native) return {&b, ptrs_[id]};
        plan::Buffer &shadow = shadowBuffers_.emplace_back(b);
        shadow.dtype = plan::DType::F32;
        shadow.bytes = uint64_t(b.numElements()) * 4;
        void *copy = base + lowAt;
        lowAt += alignUp(shadow.bytes);
        if (in) list.push_back({ptrs_[id], b.dtype, copy, plan::DType::F32, b.numElements()});
        else list.push_back({copy, plan::DType::F32, ptrs_[id], b.dtype, b.numElements()});
        return {&shadow, copy};
      };
      for (uint32_t id : in.inputs) {
        auto [buf, ptr] = stage(id, widen, true);
        ops.inputs.push_back(buf);
        ops.inPtr.push_back(ptr);
      }
      std::tie(ops.output, ops.outPtr) = stage(in.output, narrow, false);
      try {
        a.launch = k->prepare(ops);
      } catch (const RuleError &e) {
        throw UserError("", at, e.what());
      }
      if (!widen.empty() || !narrow.empty()) {
        cudaStream_t stream = stream_;
        a.launch = [widen, narrow, stream, inner = std::move(a.launch)] {
          for (const Convert &c : widen) launchConvert(c.from, c.fromType, c.to, c.toType, c.n, stream);
          inner();
          for (const Convert &c : narrow) launchConvert(c.from, c.fromType, c.to, c.toType, c.n, stream);
        };
      }
      a.op = in.op.c_str();
      break;
    }
    case plan::InstrKind::Send:
      a.ptr = ptrs_[in.inputs[0]];
      a.bytes = bufs[in.inputs[0]].bytes;
      a.staging = base + stagingAt + stagingOffset[i];
      break;
    case plan::InstrKind::Recv:
      a.bytes = bufs[in.output].bytes;
      a.ptr = ptrs_[in.output];
      break;
    case plan::InstrKind::Collective: {
      // Staged through pinned host memory (one block: contribution, result,
      // the received part it reduces), and run there as the CPU runs it:
      // the same messages and the same f32 additions in group order, so
      // GPU and CPU members of one data-parallel job agree bit for bit.
      a.ptr = ptrs_[in.inputs[0]];
      a.bytes = bufs[in.inputs[0]].bytes;
      a.result = ptrs_[in.output];
      a.resultBytes = bufs[in.output].bytes;
      const size_t scratchBytes = collectiveScratchFloats(plan, device, in) * sizeof(float);
      const size_t total = alignUp(a.bytes) + alignUp(a.resultBytes) + scratchBytes;
      cudaCheck(cudaMallocHost(&pinned_[i], std::max<size_t>(total, 1)), "cudaMallocHost");
      auto *host = static_cast<uint8_t *>(pinned_[i]);
      a.pinned = host;
      a.hostResult = host + alignUp(a.bytes);
      a.steps = expandCollective(plan, device, in, a.pinned, a.hostResult,
                                 reinterpret_cast<float *>(host + alignUp(a.bytes) +
                                                           alignUp(a.resultBytes)));
      break;
    }
    }
    actions_.push_back(std::move(a));
  }
  if (options_.cudaGraphs) {
    std::vector<bool> isKernel;
    for (const Action &a : actions_) isKernel.push_back(a.kind == plan::InstrKind::Kernel);
    graphs_.findRuns(isKernel);
  }
}

void CudaBackend::upload(uint32_t id, const void *src, size_t bytes) {
  MPC_ASSERT(id < ptrs_.size() && bytes == buffers_[id]->bytes,
             "upload of " + std::to_string(bytes) + " bytes into buffer " + std::to_string(id));
  if (bytes == 0) return;
  cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
  if (uploadCount_[id] == 0) {
    // First upload (initial values): straight from pageable memory, which
    // the driver stages before returning.
    uploadCount_[id] = 1;
    cudaCheck(cudaMemcpyAsync(ptrs_[id], src, bytes, cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync");
    return;
  }
  // A buffer fed again (an input, every step): a pinned staging buffer of its
  // own, allocated once, so the copy is truly asynchronous. The host waits
  // only for this buffer's previous upload.
  if (!uploadPinned_[id]) {
    cudaCheck(cudaMallocHost(&uploadPinned_[id], bytes), "cudaMallocHost");
    cudaCheck(cudaEventCreateWithFlags(&uploadEvents_[id], cudaEventDisableTiming),
              "cudaEventCreate");
  } else {
    cudaCheck(cudaEventSynchronize(uploadEvents_[id]), "cudaEventSynchronize");
  }
  std::memcpy(uploadPinned_[id], src, bytes);
  cudaCheck(cudaMemcpyAsync(ptrs_[id], uploadPinned_[id], bytes, cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync");
  cudaCheck(cudaEventRecord(uploadEvents_[id], stream_), "cudaEventRecord");
}

void CudaBackend::download(uint32_t id, void *dst, size_t bytes) {
  MPC_ASSERT(id < ptrs_.size() && bytes == buffers_[id]->bytes,
             "download of " + std::to_string(bytes) + " bytes from buffer " + std::to_string(id));
  cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
  if (bytes)
    cudaCheck(cudaMemcpyAsync(dst, ptrs_[id], bytes, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync");
  synchronize();
}

void CudaBackend::synchronize() {
  cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
  cudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  checkErrorFlag();
}

void CudaBackend::checkErrorFlag() {
  DataError rec{};
  cudaCheck(cudaMemcpy(&rec, dataError_, sizeof rec, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (rec.where == 0) return;
  size_t instr = size_t(rec.where & 0xffffffffull) - 1;
  int64_t step = int64_t(rec.where >> 32);
  unsigned long long key = ~rec.what;
  int64_t position = int64_t(key >> 32);
  int32_t value = int32_t(uint32_t(key & 0xffffffffull));
  MPC_ASSERT(instr < program_->instrs.size(), "bad-data record names instruction " +
                                                  std::to_string(instr));
  std::string message = badIndexMessage(program_->instrs[instr], program_->buffers, value,
                                        position, position == 0xffffffffll, rec.bound);
  // The step the kernel ran in (the executor's step number, which the
  // trainer keeps across --resume); a later step may be running by now.
  throw UserError("", whereKernel(instr), message + " in step " + std::to_string(step));
}

std::vector<float> CudaBackend::timeKernels(int reps) {
  synchronize();
  std::vector<float> ms(actions_.size(), 0.f);
  for (size_t i = 0; i < actions_.size(); ++i) {
    if (actions_[i].kind != plan::InstrKind::Kernel) continue;
    actions_[i].launch(); // warm-up (first-use costs, caches)
    cudaCheck(cudaEventRecord(timeStart_, stream_), "cudaEventRecord");
    for (int r = 0; r < reps; ++r) actions_[i].launch();
    cudaCheck(cudaEventRecord(timeEnd_, stream_), "cudaEventRecord");
    cudaCheck(cudaEventSynchronize(timeEnd_), "cudaEventSynchronize");
    launchCheck(actions_[i].op);
    cudaCheck(cudaEventElapsedTime(&ms[i], timeStart_, timeEnd_), "cudaEventElapsedTime");
    ms[i] /= float(reps > 0 ? reps : 1);
  }
  timedSteps_ = false;
  return ms;
}

void CudaBackend::launchKernel(size_t i) {
  actions_[i].launch();
  launchCheck(actions_[i].op);
}

void CudaBackend::runStep(Transport &transport, int64_t step) {
  cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
  launchBeginStep(dataError_, step, stream_);
  launchCheck("the step's start");
  auto *ct = dynamic_cast<CudaTransport *>(&transport);
  bool timed = info_ && info_->timing;
  if (timed) cudaCheck(cudaEventRecord(timeStart_, stream_), "cudaEventRecord");
  if (tracing_) cudaCheck(cudaEventRecord(traceEvents_[0], stream_), "cudaEventRecord");
  for (size_t i = 0; i < actions_.size(); ++i) {
    if (const size_t end = options_.cudaGraphs ? graphs_.runEnd(i) : i; end > i) {
      // Tracing is refused with graphs, so no event is due inside the run.
      graphs_.launch(
          i, stream_, [this](size_t k) { launchKernel(k); },
          [&] {
            return where(i) + " to " + std::to_string(end - 1) + " (" + actions_[i].op + " to " +
                   actions_[end - 1].op + ")";
          });
      stats_.kernels += end - i;
      stats_.instructions += end - i;
      i = end - 1;
      continue;
    }
    Action &a = actions_[i];
    switch (a.kind) {
    case plan::InstrKind::Kernel:
      launchKernel(i);
      ++stats_.kernels;
      break;
    case plan::InstrKind::Send:
      if (ct && ct->isDeviceChannel(a.channel)) {
        ct->waitStagingFree(a.channel, stream_);
        if (a.bytes)
          cudaCheck(cudaMemcpyAsync(a.staging, a.ptr, a.bytes, cudaMemcpyDeviceToDevice, stream_),
                    "cudaMemcpyAsync");
        ct->postDevice(a.channel, a.staging, a.bytes, stream_);
      } else {
        if (!pinned_[i] && a.bytes) cudaCheck(cudaMallocHost(&pinned_[i], a.bytes), "cudaMallocHost");
        if (a.bytes)
          cudaCheck(cudaMemcpyAsync(pinned_[i], a.ptr, a.bytes, cudaMemcpyDeviceToHost, stream_),
                    "cudaMemcpyAsync");
        synchronize();
        transport.send(a.channel, pinned_[i], a.bytes);
      }
      stats_.bytesSent += a.bytes;
      break;
    case plan::InstrKind::Recv:
      if (ct && ct->isDeviceChannel(a.channel)) {
        ct->recvDevice(a.channel, a.ptr, a.bytes, stream_);
      } else {
        if (!pinned_[i] && a.bytes) cudaCheck(cudaMallocHost(&pinned_[i], a.bytes), "cudaMallocHost");
        transport.recv(a.channel, pinned_[i], a.bytes);
        if (a.bytes)
          cudaCheck(cudaMemcpyAsync(a.ptr, pinned_[i], a.bytes, cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync");
        cudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      }
      stats_.bytesReceived += a.bytes;
      break;
    case plan::InstrKind::Collective: {
      if (a.bytes)
        cudaCheck(cudaMemcpyAsync(a.pinned, a.ptr, a.bytes, cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync");
      // Also orders this step's earlier upload of the result's pinned bytes
      // (the previous step's) before they are written again.
      synchronize();
      size_t cursor = 0;
      runCollective(transport, a.steps, cursor, /*poll=*/false, stats_);
      if (a.resultBytes)
        cudaCheck(cudaMemcpyAsync(a.result, a.hostResult, a.resultBytes, cudaMemcpyHostToDevice,
                                  stream_),
                  "cudaMemcpyAsync");
      break;
    }
    }
    ++stats_.instructions;
    if (tracing_) cudaCheck(cudaEventRecord(traceEvents_[i + 1], stream_), "cudaEventRecord");
  }
  if (timed) cudaCheck(cudaEventRecord(timeEnd_, stream_), "cudaEventRecord");
  timedSteps_ = timed;
  traced_ = tracing_;
}

void CudaBackend::setTracing(bool on) {
  if (on && options_.cudaGraphs)
    throw UserError("", deviceName_,
                    "cannot trace a step run as CUDA graphs: the trace times every instruction, "
                    "a graph replays them as one (run without --cuda-graphs)");
  if (on && !traceRef_) {
    cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
    cudaCheck(cudaEventCreate(&traceRef_), "cudaEventCreate");
    traceEvents_.assign(actions_.size() + 1, nullptr);
    for (cudaEvent_t &e : traceEvents_) cudaCheck(cudaEventCreate(&e), "cudaEventCreate");
    synchronize();
    cudaCheck(cudaEventRecord(traceRef_, stream_), "cudaEventRecord");
    cudaCheck(cudaEventSynchronize(traceRef_), "cudaEventSynchronize");
    traceRefNs_ = traceClockNs();
  }
  tracing_ = on && traceRef_;
}

void CudaBackend::takeSpans(std::vector<InstrSpan> &out) {
  if (!traced_) return;
  traced_ = false;
  cudaCheck(cudaSetDevice(gpu_), "cudaSetDevice");
  cudaCheck(cudaEventSynchronize(traceEvents_.back()), "cudaEventSynchronize");
  // cudaEventElapsedTime gives float milliseconds: the step's start
  // against the reference (coarse after hours: ~0.1 ms), each instruction
  // against the step's start (fine: within a step).
  auto elapsedMs = [](cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
    return double(ms);
  };
  const int64_t start = traceRefNs_ + int64_t(elapsedMs(traceRef_, traceEvents_[0]) * 1e6);
  int64_t begin = start;
  for (size_t i = 0; i < actions_.size(); ++i) {
    int64_t end = start + int64_t(elapsedMs(traceEvents_[0], traceEvents_[i + 1]) * 1e6);
    out.push_back({uint32_t(i), begin, std::max(begin, end)});
    begin = end;
  }
}

} // namespace mpc::runtime::cuda
