//===- runtime/cpu/CpuDevice.cpp - a logical device on the host CPU -----===//
//
// A device loads only plans that plan::verifyPlan accepted, and relies on
// what it proved (buffer ids, sizes and bounds, a send's one operand) without
// re-checking. Load checks what only the backend knows (a kernel for each
// op, its operand count and preconditions) and reports a UserError naming
// the device and instruction, so a plan that asks something of a kernel it
// cannot do is rejected before the first step, never during it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuDevice.h"

#include "runtime/cpu/LowPrecision.h"
#include "support/Error.h"

#include <cblas.h>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <sys/mman.h>

namespace mpc::runtime::cpu {

namespace {
constexpr size_t kAlign = 64;

/// BLAS runs single-threaded: the summation order of sgemm then depends only
/// on the shapes, which keeps results bit-identical run after run, and the
/// devices' worker threads already use the cores.
void limitBlasThreads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}
} // namespace

CpuDevice::~CpuDevice() {
  if (memory_) munmap(memory_, memoryBytes_);
}

void CpuDevice::fail(uint32_t instr, const std::string &message) const {
  std::string where = "device " + deviceName_;
  if (program_ && instr < program_->instrs.size()) {
    const plan::Instr &in = program_->instrs[instr];
    where += ", instruction " + std::to_string(instr);
    if (in.kind == plan::InstrKind::Kernel || in.kind == plan::InstrKind::Collective)
      where += " (" + in.op;
    else where += in.kind == plan::InstrKind::Send ? " (send" : " (recv";
    if (!in.node.empty()) where += " '" + in.node + "'";
    where += ")";
  }
  throw UserError("", where, message);
}

void CpuDevice::load(const plan::Plan &plan, uint32_t device) {
  limitBlasThreads();
  MPC_ASSERT(device < plan.devices.size(), "device index out of range");
  program_ = &plan.devices[device];
  deviceName_ = program_->device;
  const plan::DeviceProgram &prog = *program_;
  persistentBytes_ = prog.persistentBytes;
  arenaBytes_ = prog.arenaBytes;

  auto roundUp = [](uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
  uint64_t total = roundUp(persistentBytes_) + roundUp(arenaBytes_);
  if (total > (uint64_t(1) << 40))
    fail(~0u, "memory of " + std::to_string(total) + " bytes is too large");
  // Zeroed pages from the kernel (page-aligned, more than kAlign): nothing is
  // resident until written, so loading does not touch the whole arena, and
  // the initial values the executor copies in next never coexist with an
  // already committed copy of all device memory (peak RSS, issue: memory).
  memoryBytes_ = size_t(std::max<uint64_t>(total, kAlign));
  void *mem = mmap(nullptr, memoryBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) {
    memoryBytes_ = 0;
    fail(~0u, "cannot allocate " + std::to_string(total) + " bytes");
  }
  memory_ = static_cast<uint8_t *>(mem);
  uint8_t *arena = memory_ + roundUp(persistentBytes_);

  bufferPtr_.assign(prog.buffers.size(), nullptr);
  bufferBytes_.assign(prog.buffers.size(), 0);
  for (size_t b = 0; b < prog.buffers.size(); ++b) {
    // Sizes and bounds were proven by plan::verifyPlan; not re-checked.
    const plan::Buffer &buf = prog.buffers[b];
    bool persistent = buf.region == plan::Region::Persistent;
    bufferPtr_[b] = (persistent ? memory_ : arena) + buf.offset;
    bufferBytes_[b] = buf.bytes;
  }

  const CpuKernelRegistry &registry = cpuKernels();
  kernels_.clear();
  staging_.clear();
  steps_.clear();
  collectives_.clear();
  collectiveCursor_ = 0;
  // One work space for every collective (they run one at a time), sized
  // first: the steps point into it.
  size_t collectiveFloats = 0;
  for (const plan::Instr &in : prog.instrs)
    if (in.kind == plan::InstrKind::Collective)
      collectiveFloats = std::max(collectiveFloats, collectiveScratchFloats(plan, device, in));
  collectiveScratch_.assign(collectiveFloats, 0.f);
  kernels_.reserve(prog.instrs.size());
  for (uint32_t i = 0; i < prog.instrs.size(); ++i) {
    const plan::Instr &in = prog.instrs[i];
    Step s;
    s.kind = in.kind;
    s.instr = i;
    switch (in.kind) {
    case plan::InstrKind::Send:
    case plan::InstrKind::Recv: {
      // Buffer ids and a send's one operand: proven by plan::verifyPlan.
      uint32_t id = in.kind == plan::InstrKind::Send ? in.inputs[0] : in.output;
      s.data = bufferPtr_[id];
      s.bytes = bufferBytes_[id];
      s.channel = in.channel;
      break;
    }
    case plan::InstrKind::Collective:
      // Op, group, buffers and types: proven by plan::verifyPlan.
      s.kernel = collectives_.size();
      collectives_.push_back(expandCollective(plan, device, in, bufferPtr_[in.inputs[0]],
                                              bufferPtr_[in.output], collectiveScratch_.data()));
      break;
    case plan::InstrKind::Kernel: {
      const CpuKernel *kernel = registry.find(in.op);
      if (!kernel) fail(i, missingKernelMessage(in.op, "cpu", registry.names()));
      // Operand count, attributes and buffer types: proven by
      // plan::verifyPlan against the op's schema.
      KernelInstance k;
      k.run = kernel->run;
      k.step = &step_;
      k.seed = plan.seed;
      k.attrs = &in.attrs;
      auto arg = [&](uint32_t id) {
        const plan::Buffer &buf = prog.buffers[id];
        TensorArg t;
        t.data = bufferPtr_[id];
        t.dtype = buf.dtype;
        t.shape = buf.shape;
        t.numel = buf.numElements();
        return t;
      };
      for (uint32_t id : in.inputs) k.in.push_back(arg(id));
      k.out = arg(in.output);
      LowPrecisionStaging staging;
      if (in.op != "cast") staging = stageLowPrecision(k);
      if (kernel->prepare) {
        try {
          kernel->prepare(k);
        } catch (const RuleError &e) {
          fail(i, e.what());
        }
      }
      s.kernel = kernels_.size();
      kernels_.push_back(std::move(k));
      staging_.push_back(std::move(staging));
      break;
    }
    default:
      fail(i, "unknown instruction kind " + std::to_string(int(in.kind)));
    }
    steps_.push_back(s);
  }
  // One work space for all kernels, allocated here and never during a step.
  int64_t scratchFloats = 0;
  for (const KernelInstance &k : kernels_) scratchFloats = std::max(scratchFloats, k.scratchFloats);
  scratch_.assign(size_t(scratchFloats), 0.f);
  for (KernelInstance &k : kernels_)
    if (k.scratchFloats > 0) k.floats = scratch_.data();
  // And one for the f32 copies of bf16 and f16 buffers.
  int64_t stagingFloats = 0;
  for (const LowPrecisionStaging &st : staging_) stagingFloats = std::max(stagingFloats, st.floats);
  stagingSpace_.assign(size_t(stagingFloats), 0.f);
  for (size_t i = 0; i < kernels_.size(); ++i)
    if (staging_[i].any()) pointStaging(kernels_[i], staging_[i], stagingSpace_.data());
}

void CpuDevice::upload(uint32_t buffer, const void *src, size_t bytes) {
  MPC_ASSERT(buffer < bufferPtr_.size() && bytes == bufferBytes_[buffer],
             "bad upload to buffer " + std::to_string(buffer));
  std::memcpy(bufferPtr_[buffer], src, bytes);
}

void CpuDevice::download(uint32_t buffer, void *dst, size_t bytes) {
  MPC_ASSERT(buffer < bufferPtr_.size() && bytes == bufferBytes_[buffer],
             "bad download from buffer " + std::to_string(buffer));
  std::memcpy(dst, bufferPtr_[buffer], bytes);
}

void *CpuDevice::bufferData(uint32_t id) const {
  MPC_ASSERT(id < bufferPtr_.size(), "buffer id out of range");
  return bufferPtr_[id];
}

template <bool Poll> bool CpuDevice::run(Transport &transport, int64_t step, size_t &pc) {
  step_ = step;
  if (tracing_ && pc == 0) lastTick_ = traceTicks();
  for (; pc < steps_.size(); ++pc) {
    const Step &s = steps_[pc];
    switch (s.kind) {
    case plan::InstrKind::Kernel: {
      const KernelInstance &k = kernels_[s.kernel];
      const LowPrecisionStaging &low = staging_[s.kernel];
      if (low.any()) widenOperands(low, stagingSpace_.data());
      try {
        k.run(k);
      } catch (const RuleError &e) {
        fail(s.instr, e.what());
      }
      if (low.any()) narrowResult(low, stagingSpace_.data());
      ++stats_.kernels;
      break;
    }
    case plan::InstrKind::Send:
      transport.send(s.channel, s.data, s.bytes);
      stats_.bytesSent += s.bytes;
      break;
    case plan::InstrKind::Recv:
      if constexpr (Poll) {
        if (!transport.tryRecv(s.channel, s.data, s.bytes)) return false;
      } else {
        transport.recv(s.channel, s.data, s.bytes);
      }
      stats_.bytesReceived += s.bytes;
      break;
    case plan::InstrKind::Collective:
      if (!runCollective(transport, collectives_[s.kernel], collectiveCursor_, Poll, stats_))
        return false;
      break;
    }
    if (tracing_) {
      uint64_t now = traceTicks();
      spans_.push_back({s.instr, lastTick_, now});
      lastTick_ = now;
    }
  }
  stats_.instructions += steps_.size();
  return true;
}

void CpuDevice::setTracing(bool on) {
  if (on && !tracing_) ticks_.start();
  tracing_ = on;
}

void CpuDevice::takeSpans(std::vector<InstrSpan> &out) {
  ticks_.advance();
  for (const TickSpan &s : spans_) out.push_back({s.instr, ticks_.toNs(s.begin), ticks_.toNs(s.end)});
  spans_.clear();
}

void CpuDevice::runStep(Transport &transport, int64_t step) {
  size_t pc = 0;
  run<false>(transport, step, pc);
}

bool CpuDevice::runUntilBlocked(Transport &transport, int64_t step, size_t &pc) {
  return run<true>(transport, step, pc);
}

} // namespace mpc::runtime::cpu

namespace mpc::runtime {
BackendFactory cpuBackendFactory() {
  return [](const plan::Plan &, uint32_t) -> std::unique_ptr<Backend> {
    return std::make_unique<cpu::CpuDevice>();
  };
}
} // namespace mpc::runtime
