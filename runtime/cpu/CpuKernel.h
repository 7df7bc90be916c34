//===- runtime/cpu/CpuKernel.h - the CPU kernel interface ---------------===//
//
// A CPU kernel is two functions: `prepare` runs once when a plan is loaded
// (reads the attributes, precomputes strides and sizes into the instance),
// `run` runs every step with nothing left to look up. Buffer addresses are
// fixed at load, so an instance holds raw pointers into its device's arena.
// The plan verifier has already proven the instruction against its op's
// schema (operand count, attributes, and buffer types that the op's shape
// rule gives: plan/OpSignatures.h), so `prepare` checks only what the
// verifier cannot know, such as a BLAS size limit.
//
// Kernels are plain loops in a fixed order (matmul is cblas_sgemm with one
// BLAS thread), so results do not depend on timing. Each op's kernel lives in
// the file of its family (kernels/<Family>.cpp, the family of
// ops/OpList.def); the registry takes names and families from that list.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Type.h"
#include "plan/Attrs.h"
#include "plan/Plan.h"
#include "plan/PlanIO.h"
#include "runtime/KernelRegistry.h"
#include "runtime/Strides.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::runtime::cpu {

/// A buffer as a kernel sees it.
struct TensorArg {
  void *data = nullptr;
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> shape;
  int64_t numel = 1;

  float *f() const { return static_cast<float *>(data); }
  int32_t *i() const { return static_cast<int32_t *>(data); }
  int64_t rank() const { return int64_t(shape.size()); }
};

struct KernelInstance;
/// Precomputes; throws RuleError for what only the backend knows (a size
/// beyond BLAS's int range).
using PrepareFn = void (*)(KernelInstance &k);
/// Executes; may throw RuleError on bad data (a label out of range).
using RunFn = void (*)(const KernelInstance &k);

struct CpuKernel {
  PrepareFn prepare = nullptr; ///< may be null: nothing to precompute
  RunFn run = nullptr;
};

/// One resolved kernel instruction.
struct KernelInstance {
  RunFn run = nullptr;
  std::vector<TensorArg> in;
  TensorArg out;
  const plan::AttrMap *attrs = nullptr; ///< the instruction's; null: none
  const int64_t *step = nullptr; ///< the running step's number (dropout)
  uint64_t seed = 0;             ///< the plan's seed (dropout)
  // Filled by prepare:
  std::vector<int64_t> ints; ///< sizes/strides, meaning per kernel
  std::vector<std::vector<int64_t>> strides; ///< per input, broadcast strides over out
  double scalar = 0;         ///< a float attribute (scale value, fill value)
  std::vector<double> reals; ///< several float attributes (optimizer hyper-parameters)
  int64_t outer = 1, axis = 1, inner = 1; ///< reductions/softmax: [outer, axis, inner]
  mutable std::vector<double> scratch; ///< per-instance work space (reductions)
  /// f32 work space the kernel asks for in prepare (conv2d's im2col
  /// columns). A device runs its instructions one at a time, so it gives
  /// every instance the same buffer, sized for the largest request, in
  /// `floats` (null when none is asked for).
  int64_t scratchFloats = 0;
  float *floats = nullptr;

  /// The instruction's attributes, for the typed reads of plan/Attrs.h.
  const plan::AttrMap &attrMap() const {
    static const plan::AttrMap none;
    return attrs ? *attrs : none;
  }
};

using CpuKernelRegistry = KernelRegistry<CpuKernel>;

/// Every CPU kernel: one per op of ops/OpList.def, under the op's name.
const CpuKernelRegistry &cpuKernels();

/// The kernels themselves: op `Kind` of family `Family` is
/// kernels::Family::Kind, defined in kernels/<Family>.cpp. The list is the
/// op list, so an op without a CPU kernel does not link.
namespace kernels {
#define MPC_OP(Kind, Name, Family)                                                          \
  namespace Family {                                                                         \
  extern const CpuKernel Kind;                                                               \
  }
#define MPC_COLLECTIVE(Kind, Name)
#include "ops/OpList.def"
} // namespace kernels

// The typed attribute reads (plan/Attrs.h) and strides
// (runtime/Strides.h) the family files use.
using plan::attrBool;
using plan::attrFloat;
using plan::attrInt;
using plan::attrInts;
using plan::attrString;
using plan::hasAttr;
using runtime::broadcastStrides;
using runtime::contiguousStrides;
using runtime::unravelIndex;

/// The operands' types, for the op contract's geometry (ops/Window.h).
std::vector<ops::TensorType> operandTypes(const KernelInstance &k);

} // namespace mpc::runtime::cpu
