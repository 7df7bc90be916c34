//===- ops/Loss.h - the reduction attribute of the losses ----------------===//
//
// softmax_cross_entropy and its gradient op read their `reduction` attribute
// one way in the shape and batch rules (ops/Loss.cpp) and in the reference
// kernels (ir/ops/Loss.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"

namespace mpc::ops {

/// Whether `reduction` is "sum"; rejects anything but "mean" and "sum" with a
/// RuleError naming `op`.
bool sumReduction(const char *op, const AttrMap &attrs);

} // namespace mpc::ops
