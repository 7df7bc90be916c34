//===- ops/DropoutMask.h - which elements a dropout mask keeps -----------===//
//
// A dropout mask is a pure function of (plan seed, key, step, element
// index) through support/Philox.h: nothing is stored, and the backward, a
// recomputation, a micro-batch or a tensor-parallel part draws the same
// mask from the same attributes. Two ops draw one: `dropout`, over x, and
// `attention`, over its probabilities [..., T, S] (attribute dropout_p).
// Both name their mask with the same attributes, described once here:
//   key     the mask's stream (empty: the node's name);
//   offset  the index of the first element in the whole batch (set by
//           micro-batching);
//   parts, part, inner
//           the tensor is one of `parts` equal parts of the whole along an
//           axis (set by tensor parallelism): the whole is blocks of
//           `parts` runs of `inner` elements, and this part holds run
//           `part` of each block.
//
// C++17: CUDA translation units include it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "support/Philox.h"

#include <cstdint>

namespace mpc::ops {

/// Where a tensor's elements sit in the whole mask.
struct MaskPart {
  uint64_t offset = 0, parts = 1, part = 0, inner = 1;
  /// The mask index of the tensor's element j (philox::dropoutKeep's).
  MPC_HOST_DEVICE uint64_t index(uint64_t j) const {
    return offset + (parts == 1 ? j : (j / inner * parts + part) * inner + j % inner);
  }
};

/// The offset, parts, part and inner attributes.
MaskPart maskPartOf(const AttrMap &attrs);

} // namespace mpc::ops
