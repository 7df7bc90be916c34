//===- runtime/cuda/kernels/Descriptors.h - shape descriptors for the kernels ---===//
//
// Host-side construction of the StridedDesc / ReduceDesc values the kernels
// take: NumPy broadcasting, permutations and reductions turned into strides,
// with size-1 dims dropped and contiguous dims merged so that the device
// index arithmetic stays short. Throws RuleError when a shape needs more than
// kMaxRank dims after merging.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/kernels/Kernels.h"

#include <cstdint>
#include <vector>

namespace mpc::runtime::cuda {

using Dims = std::vector<int64_t>;

/// Output `out`, operands `a` and `b` broadcast to it (right-aligned).
StridedDesc broadcastDesc(const Dims &out, const Dims &a, const Dims &b);
/// Output `out` read from `in` broadcast to it (broadcast_to).
StridedDesc broadcastDesc(const Dims &out, const Dims &in);
/// Output of transposing `in` by `perm` (normalised).
StridedDesc transposeDesc(const Dims &in, const std::vector<int64_t> &perm);
/// Reduction of `in` over the axes flagged in `reduced`.
ReduceDesc reduceDesc(const Dims &in, const std::vector<bool> &reduced);

} // namespace mpc::runtime::cuda
