//===- runtime/cpu/LowPrecision.h - bf16 and f16 operands on the CPU ------===//
//
// Every CPU kernel but cast is written over f32. An instruction with bf16
// or f16 buffers runs the same kernel on f32 staging copies: its
// low-precision operands are widened into them before the kernel, and a
// low-precision result is rounded from its staging copy after it
// (ops/Float16.h: nearest-even). This is the semantics of every backend and
// of the reference interpreter for the low types: compute in f32, round
// where a value is stored (docs/precision.md). CPU speed in the low types is
// not a goal; the numerics are what the CPU checks.
//
// A device runs one instruction at a time, so every instruction's staging
// lies in one work space, sized for the largest.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cpu/CpuKernel.h"

#include <cstdint>
#include <vector>

namespace mpc::runtime::cpu {

/// The staging of one instruction: which buffers convert, and where their
/// f32 copies lie in the device's staging work space.
struct LowPrecisionStaging {
  struct Copy {
    void *buffer = nullptr;   ///< the instruction's own (bf16 or f16) buffer
    plan::DType dtype = plan::DType::BF16;
    int64_t numel = 0;
    int64_t offset = 0;       ///< in floats, in the work space
    int arg = -1;             ///< which of the kernel's operands (-1: its result)
  };
  std::vector<Copy> widen;    ///< operands, widened before the kernel
  std::vector<Copy> narrow;   ///< the result, rounded after it (none or one)
  int64_t floats = 0;         ///< work space this instruction needs
  bool any() const { return !widen.empty() || !narrow.empty(); }
};

/// Plans the staging of kernel instance `k` (not cast, which converts
/// itself): records each low-precision buffer, and makes `k` see an f32
/// buffer in its place (pointStaging gives the address).
LowPrecisionStaging stageLowPrecision(KernelInstance &k);
/// Points `k`'s staged operands and result into `space`, once it exists.
void pointStaging(KernelInstance &k, const LowPrecisionStaging &s, float *space);

/// Before the kernel: the operands' f32 copies.
void widenOperands(const LowPrecisionStaging &s, float *space);
/// After the kernel: the result's rounding into its own buffer.
void narrowResult(const LowPrecisionStaging &s, const float *space);

} // namespace mpc::runtime::cpu
