//===- runtime/cpu/CpuDevice.h - a logical device on the host CPU -------===//
//
// The CPU backend: one aligned allocation per device holding its persistent
// region (params, state, inputs, outputs) and its arena of temporaries at
// the offsets the memory planner chose. At load every instruction becomes a
// compact step (a prepared kernel instance, or a send/recv with its address
// and size); runStep walks them on the device's worker thread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"
#include "runtime/Collective.h"
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/LowPrecision.h"

#include <memory>
#include <string>
#include <vector>

namespace mpc::runtime::cpu {

class CpuDevice : public Backend {
public:
  CpuDevice() = default;
  ~CpuDevice() override;

  std::string kind() const override { return "cpu"; }
  void load(const plan::Plan &plan, uint32_t device) override;
  void upload(uint32_t buffer, const void *src, size_t bytes) override;
  void download(uint32_t buffer, void *dst, size_t bytes) override;
  void runStep(Transport &transport, int64_t step) override;
  bool canPause() const override { return true; }
  bool runUntilBlocked(Transport &transport, int64_t step, size_t &pc) override;
  DeviceStats stats() const override { return stats_; }
  void setTracing(bool on) override;
  void takeSpans(std::vector<InstrSpan> &out) override;

  /// Address of buffer `id` in this device's memory (tests).
  void *bufferData(uint32_t id) const;

private:
  struct Step {
    plan::InstrKind kind;
    uint32_t instr = 0;    ///< index in the device's list (diagnostics)
    size_t kernel = 0;     ///< index in kernels_ (Kernel) or collectives_ (Collective)
    void *data = nullptr;  ///< Send/Recv buffer
    size_t bytes = 0;
    uint32_t channel = 0;
  };

  [[noreturn]] void fail(uint32_t instr, const std::string &message) const;
  /// The instruction loop from `pc` on: a Recv blocks, or with `Poll`
  /// returns false when its message has not come (runUntilBlocked).
  template <bool Poll> bool run(Transport &transport, int64_t step, size_t &pc);

  const plan::DeviceProgram *program_ = nullptr;
  std::string deviceName_;
  uint8_t *memory_ = nullptr; ///< persistent region, then the arena (mmap'd)
  size_t memoryBytes_ = 0;    ///< the mapping's length
  uint64_t persistentBytes_ = 0, arenaBytes_ = 0;
  std::vector<void *> bufferPtr_;
  std::vector<uint64_t> bufferBytes_;
  std::vector<KernelInstance> kernels_;
  /// Per kernel instance: the f32 copies of its bf16/f16 buffers
  /// (runtime/cpu/LowPrecision.h), in stagingSpace_.
  std::vector<LowPrecisionStaging> staging_;
  std::vector<float> stagingSpace_;
  std::vector<float> scratch_; ///< the kernels' shared f32 work space (KernelInstance::floats)
  /// Each collective instruction's steps (runtime/Collective.h), and where
  /// the one in progress stands when the device paused inside it.
  std::vector<std::vector<CollectiveStep>> collectives_;
  size_t collectiveCursor_ = 0;
  std::vector<float> collectiveScratch_;
  int64_t step_ = 0; ///< the running step's number (KernelInstance::step points here)
  std::vector<Step> steps_;
  DeviceStats stats_;
  /// Tracing (mpc run --trace): each instruction's end in ticks (one clock
  /// read per instruction: an instruction begins where the one before it
  /// ended, so a receive's span holds its wait), converted at takeSpans.
  struct TickSpan {
    uint32_t instr;
    uint64_t begin, end;
  };
  bool tracing_ = false;
  std::vector<TickSpan> spans_;
  uint64_t lastTick_ = 0;
  TraceTicks ticks_;
};

} // namespace mpc::runtime::cpu
