//===- frontend/onnx/Fuse.h - exporters' decompositions, fused back -------===//
//
// Exporters write some ops as chains of smaller ones. The import fuses them
// back into the one mpc op, so that mpc runs (and differentiates) them as
// one kernel with PyTorch's arithmetic:
//   * GELU before opset 20: PyTorch's exact gelu, erf(x / √2), and its
//     tanh approximation, tanh(√(2/π) (x + 0.044715 x³)) (F.gelu with
//     approximate "tanh"; GPT-2's gelu_new, x³ as Pow or as products),
//     then 0.5 · x · (1 + f) in either grouping, become a node "Gelu"
//     (approximate "none" or "tanh");
//   * layer norm before opset 17, over the last axis:
//       ReduceMean(x) → Sub(x, mean) → Pow(d, 2) → ReduceMean → Add(·, eps)
//       → Sqrt → Div(d, ·) [→ Mul(·, gamma) → Add(·, beta)]
//     becomes a node "LayerNormalization" (axis -1, epsilon eps);
//   * a zero Pad of the spatial axes into a Conv, or into an AveragePool
//     (PyTorch's AvgPool2d with count_include_pad) becomes the consumer's
//     own pads.
// A chain fuses only when its inner values have no other use and are not
// graph outputs; otherwise it stays, and its Erf, Sqrt or Pow is reported
// as unsupported where it is.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/Constant.h"

#include <functional>
#include <onnx/onnx_pb.h>

namespace mpc::frontend::onnx {

/// Rewrites `graph`'s nodes in place; `known` returns a value known before
/// folding (an initializer or a Constant node's), or null. Returns how many
/// chains it fused.
int fuseDecompositions(::onnx::GraphProto &graph,
                       const std::function<const Const *(const std::string &)> &known);

} // namespace mpc::frontend::onnx
