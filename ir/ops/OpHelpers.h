//===- ir/ops/OpHelpers.h - shared pieces of the op records -------------===//
//
// The family files in ir/ops/ build their records from these helpers: dtype
// and rank checks that throw RuleError with both shapes in the message, the
// NumPy broadcasting loop of the reference kernels, and small constructors for
// attribute specs. Only the op records include this header.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Builder.h"
#include "ir/OpInfo.h"
#include "support/Error.h"

#include <cmath>
#include <utility>
#include <span>
#include <string>
#include <vector>

namespace mpc::ir::ophelpers {

/// "f32[100,2] x f32[3,1]": how a rule names two operands.
inline std::string pairStr(const TensorType &a, const TensorType &b) {
  return a.str() + " x " + b.str();
}

/// Throws unless `t` has dtype `want`; names the op and the operand.
inline void requireDType(const TensorType &t, DType want, const char *op,
                         const std::string &operand) {
  if (t.dtype != want)
    throw RuleError(std::string(op) + " operand '" + operand + "' must be " +
                    dtypeName(want) + ", got " + t.str());
}

/// Throws unless every operand is f32.
inline void requireAllF32(std::span<const TensorType> ops, const OpInfo &info) {
  for (size_t i = 0; i < ops.size(); ++i)
    requireDType(ops[i], DType::F32, info.name, info.operandName(i));
}

/// Throws "shape mismatch: A x B" unless `a` and `b` have the same type.
inline void requireSameType(const TensorType &a, const TensorType &b) {
  if (a != b) throw RuleError("shape mismatch: " + pairStr(a, b));
}

/// Result of NumPy broadcasting of two f32 operands.
inline TensorType broadcastPair(const TensorType &a, const TensorType &b) {
  std::optional<Shape> s = broadcastShapes(a.shape, b.shape);
  if (!s) throw RuleError("shape mismatch: " + pairStr(a, b));
  return {DType::F32, *s};
}

/// Checks a user-given shape: no negative dims, element count in range.
inline void requireValidShape(const Shape &s, const char *op) {
  if (!checkedNumElements(s))
    throw RuleError(std::string(op) + " shape " + shapeText(s) +
                    " has a negative dimension or too many elements");
}

/// An attribute spec; `def` nullopt makes it required.
inline AttrSpec attr(std::string name, AttrType type, std::optional<AttrValue> def,
                     std::string doc) {
  return AttrSpec{std::move(name), type, std::move(def), std::move(doc)};
}

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

/// Whether gelu's `approximate` attribute asks for the tanh form; throws
/// RuleError for anything but "none" and "tanh".
inline bool geluUsesTanh(const AttrMap &attrs, const char *op) {
  const std::string &mode = getString(attrs, "approximate");
  if (mode == "none") return false;
  if (mode == "tanh") return true;
  throw RuleError(std::string(op) + " approximate must be \"none\" or \"tanh\", got \"" +
                  mode + "\"");
}

/// Window attributes (kernel, stride, padding, dilation, sizes) beyond this
/// are surely mistakes; bounding them keeps size arithmetic far from int64
/// overflow (conv2d and the pools).
constexpr int64_t kMaxWindowAttr = int64_t(1) << 20;

/// A two-value (height, width) attribute `v` named `name`, each value in
/// [lo, kMaxWindowAttr]; `what` words the lower bound for the message
/// ("positive").
inline std::pair<int64_t, int64_t> heightWidth(const char *op, const std::vector<int64_t> &v,
                                               const char *name, int64_t lo, const char *what) {
  if (v.size() != 2)
    throw RuleError(std::string(op) + " " + name + " must have 2 values (height, width), got " +
                    shapeText(v));
  for (int64_t e : v) {
    if (e < lo)
      throw RuleError(std::string(op) + " " + name + " " + shapeText(v) + " must be " + what);
    if (e > kMaxWindowAttr)
      throw RuleError(std::string(op) + " " + name + " " + shapeText(v) + " exceeds " +
                      std::to_string(kMaxWindowAttr));
  }
  return {v[0], v[1]};
}

/// Elements of a type, as a double (for flop counts).
inline double elems(const TensorType &t) { return double(t.numElements()); }

/// Splits `shape` around `axis` into (outer, size, inner) extents.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
inline AxisSplit splitAt(const Shape &shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < int64_t(shape.size()); ++i) {
    if (i < axis) s.outer *= shape[size_t(i)];
    else if (i == axis) s.size = shape[size_t(i)];
    else s.inner *= shape[size_t(i)];
  }
  return s;
}

/// Normalises an axis attribute against `t`, or throws naming the type.
inline int64_t axisOf(int64_t axis, const TensorType &t, const char *op) {
  std::optional<int64_t> a = normalizeAxis(axis, t.rank());
  if (!a)
    throw RuleError(std::string(op) + " axis " + std::to_string(axis) +
                    " out of range for " + t.str());
  return *a;
}

} // namespace mpc::ir::ophelpers

namespace mpc::ir::ophelpers {

using RefOps = std::span<RefTensor *const>;
using TypeOps = std::span<const TensorType>;

/// A record with the identifying fields set and every operand required.
inline OpInfo makeOp(OpKind kind, const char *name, const char *family, const char *doc,
                     std::vector<std::string> operands) {
  OpInfo r{};
  r.kind = kind;
  r.name = name;
  r.family = family;
  r.doc = doc;
  r.minArity = int(operands.size());
  r.operands = std::move(operands);
  return r;
}

/// `flops` of an op that costs `k` flops per result element.
template <int K> double flopsPerElement(TypeOps, const TensorType &result, const AttrMap &) {
  return K * elems(result);
}

/// `flops` of an op that costs `k` flops per element of its first operand.
template <int K> double flopsPerInput(TypeOps ops, const TensorType &, const AttrMap &) {
  return K * elems(ops[0]);
}

/// `flops` of data movement only.
inline double noFlops(TypeOps, const TensorType &, const AttrMap &) { return 0.0; }

} // namespace mpc::ir::ophelpers
