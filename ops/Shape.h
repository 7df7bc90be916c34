//===- ops/Shape.h - transpose's, slice's and concat's axes --------------===//
//
// transpose, slice and concat read their axes from the operand types and the
// attributes. Their shape and batch rules (ops/Shape.cpp) and their gradient
// rules and reference kernels (ir/ops/Shape.cpp) read them here, one way;
// each function checks what it reads and throws RuleError naming the types.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/Type.h"

#include <cstdint>
#include <span>
#include <vector>

namespace mpc::ops {

/// The permutation a transpose node applies ([] = reversed axes), checked.
std::vector<int64_t> permOf(const TensorType &x, const AttrMap &attrs);

/// The normalised axis, start and end of a slice of `x`, checked.
struct SliceRange {
  int64_t axis = 0, start = 0, end = 0;
};
SliceRange sliceOf(const TensorType &x, const AttrMap &attrs);

/// The normalised concat axis of the operands; checks that they agree with
/// the first one (dtype, rank, every dimension but the axis).
int64_t concatAxisOf(std::span<const TensorType> ops, const AttrMap &attrs);

} // namespace mpc::ops
