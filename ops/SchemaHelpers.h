//===- ops/SchemaHelpers.h - shared pieces of the op schemas -------------===//
//
// The family files in ops/ build their schemas from these helpers: dtype and
// rank checks that throw RuleError with both shapes in the message, small
// constructors for schemas and attribute specs, and common flop counts. The
// IR's rule files (ir/ops/) use them too, through ir/ops/OpHelpers.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/OpSchema.h"
#include "support/Error.h"

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace mpc::ops::helpers {

using TypeOps = std::span<const TensorType>;

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
inline void requireAllF32(TypeOps ops, const OpSchema &op) {
  for (size_t i = 0; i < ops.size(); ++i)
    requireDType(ops[i], DType::F32, op.name, op.operandName(i));
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

/// Checks a user-given shape: rank, no negative dims, element count in range.
inline void requireValidShape(const Shape &s, const char *op) {
  if (s.size() > kMaxRank)
    throw RuleError(std::string(op) + " shape " + shapeText(s) + ": " + rankLimitText(s.size()));
  if (!checkedNumElements(s))
    throw RuleError(std::string(op) + " shape " + shapeText(s) +
                    " has a negative dimension or too many elements");
}

/// An attribute spec; `def` nullopt makes it required.
inline AttrSpec attr(std::string name, AttrType type, std::optional<AttrValue> def,
                     std::string doc) {
  return AttrSpec{std::move(name), type, std::move(def), std::move(doc)};
}

/// The attributes that name a dropout mask (ops/DropoutMask.h), which
/// dropout and attention declare after their probability.
std::vector<AttrSpec> dropoutMaskAttrs();
/// Checks `probability` in [0, 1) and parts/part/inner against the
/// `elements` of the tensor the mask covers; the errors name `op`.
void checkDropoutMask(const AttrMap &attrs, const char *probability, int64_t elements,
                      const std::string &op);
/// Tensor parallelism: a mask over `covered` (its whole shape) whose axis
/// `axis` is split into `parts`: each member draws its elements' whole
/// indices (ShardResult::memberAttr "part", local parts and inner), unless
/// the attributes are already one member's.
void splitDropoutMask(ShardResult &r, const AttrMap &attrs, const Shape &covered, int axis,
                      int64_t parts);

/// Whether gelu's `approximate` attribute asks for the tanh form; throws
/// RuleError for anything but "none" and "tanh".
inline bool geluUsesTanh(const AttrMap &attrs, const char *op) {
  const std::string &mode = getString(attrs, "approximate");
  if (mode == "none") return false;
  if (mode == "tanh") return true;
  throw RuleError(std::string(op) + " approximate must be \"none\" or \"tanh\", got \"" +
                  mode + "\"");
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

/// A schema with the identifying fields set and every operand required.
inline OpSchema makeSchema(OpKind kind, const char *name, const char *family, const char *doc,
                           std::vector<std::string> operands) {
  OpSchema r{};
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

} // namespace mpc::ops::helpers
