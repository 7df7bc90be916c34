//===- runtime/cuda/kernels/Prepare.h - helpers of the CUDA prepare fns -===//
//
// What the host side of every CUDA kernel family shares: the operand types,
// axis normalisation, the [outer, size, inner] view of a tensor around one
// axis, and the copy launch of the identity ops. The typed attribute reads
// are plan/Attrs.h, shared with the CPU. Operand counts, attributes and
// buffer types were proven by the plan verifier (plan/OpSignatures.h), so a
// prepare function checks only the device's limits; it throws RuleError with
// the reason, and the runtime adds the device and instruction.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Type.h"
#include "plan/Attrs.h"
#include "runtime/cuda/kernels/CudaKernels.h"
#include "runtime/cuda/kernels/Kernels.h"
#include "support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::runtime::cuda {

using plan::attrBool;
using plan::attrFloat;
using plan::attrInt;
using plan::attrInts;
using plan::attrString;

/// The operands' types, for the op contract's geometry (ops/Window.h).
std::vector<ops::TensorType> operandTypes(const KernelOperands &k);

/// `axis`, in [-rank, rank) (proven by the plan verifier), made non-negative.
int64_t normAxis(int64_t axis, size_t rank);

inline float *f(void *p) { return static_cast<float *>(p); }
inline const float *cf(void *p) { return static_cast<const float *>(p); }

/// A device-to-device copy of the input into the output (a no-op when the
/// plan gave both the same memory).
Launch copyLaunch(const KernelOperands &k);

/// A shape seen as [outer, size, inner] around one axis (slice, concat,
/// softmax).
struct Split {
  int64_t outer = 1, size = 1, inner = 1;
};
Split splitAt(const std::vector<int64_t> &shape, int64_t axis);

} // namespace mpc::runtime::cuda
