//===- ops/Reduce.h - the reduced axes of sum and mean -------------------===//
//
// sum and mean name the axes they reduce in their `axes` attribute. Their
// shape and batch rules (ops/Reduce.cpp) and their gradient rules and
// reference kernels (ir/ops/Reduce.cpp) read those axes here, one way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/Type.h"

#include <vector>

namespace mpc::ops {

/// For each axis of `t`: whether the `axes` attribute of `op` (sum or mean)
/// reduces it; [] reduces every axis. Throws RuleError naming `t` for an axis
/// out of range or repeated.
std::vector<bool> reducedAxes(const char *op, const TensorType &t, const AttrMap &attrs);

} // namespace mpc::ops
