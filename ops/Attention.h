//===- ops/Attention.h - what every attention kernel shares ---------------===//
//
// C++17: CUDA translation units include it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"

#include <cstdint>

namespace mpc::ops {

/// The factor of q k^T: the `scale` attribute, or 1/sqrt(depth) for its
/// default 0 (PyTorch's scale=None).
double attentionScale(const AttrMap &attrs, int64_t depth);

} // namespace mpc::ops
