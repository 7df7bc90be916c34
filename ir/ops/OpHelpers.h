//===- ir/ops/OpHelpers.h - shared pieces of the IR's op rules ----------===//
//
// The family files in ir/ops/ write their gradient rules and reference
// kernels with these helpers: the NumPy broadcasting loop of the reference
// kernels, gelu in float64, and the schemas' own helpers
// (ops/SchemaHelpers.h). Only the rule files include this header.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Builder.h"
#include "ir/OpInfo.h"
#include "ops/SchemaHelpers.h"
#include "support/Error.h"

#include <cmath>
#include <utility>
#include <span>
#include <string>
#include <vector>

namespace mpc::ir::ophelpers {

/// The schemas' helpers (type checks, attribute specs, flop counts).
using namespace ops::helpers;

/// Applies `f(a)` elementwise: out[i] = f(in[i]); shapes are equal.
template <typename F> void mapUnary(const RefTensor &in, RefTensor &out, F f) {
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = f(in.data[i]);
}

/// out[idx] = f(a[bcast(idx)], b[bcast(idx)]) over the broadcast result.
template <typename F>
void mapBinaryBroadcast(const RefTensor &a, const RefTensor &b, RefTensor &out, F f) {
  if (out.data.empty()) return;
  if (a.shape == out.shape && b.shape == out.shape) {
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = f(a.data[i], b.data[i]);
    return;
  }
  std::vector<int64_t> idx(out.shape.size(), 0);
  size_t flat = 0;
  do {
    out.data[flat++] = f(a.data[size_t(broadcastIndex(idx, a.shape))],
                         b.data[size_t(broadcastIndex(idx, b.shape))]);
  } while (nextIndex(idx, out.shape));
}

/// A pointer to the node a gradient rule receives (rules get `const Node &`
/// but Builder takes mutable operands; the rule never modifies the node).
inline Node *self(const Node &n) { return const_cast<Node *>(&n); }

/// Gelu (exact, erf form) and its derivative.
inline double geluRef(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double geluDerivRef(double x) {
  constexpr double kInvSqrt2Pi = 0.39894228040143267794;
  return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
}

/// Gelu's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
/// and its derivative.
inline double geluTanhRef(double x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}
inline double geluTanhDerivRef(double x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
}

using RefOps = std::span<RefTensor *const>;

} // namespace mpc::ir::ophelpers
