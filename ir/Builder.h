//===- ir/Builder.h - creates op nodes and runs their shape rule ---------===//
//
// Passes and gradient rules create nodes through a Builder: it fills in the
// attribute defaults from the op's schema, runs the op's shape rule, derives a
// unique name from `namePrefix` and a hint, and places the node on `device`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace mpc::ir {

class Builder {
public:
  explicit Builder(Graph &graph) : graph_(graph) {}

  Graph &graph() { return graph_; }

  /// Device given to every node created (may be "").
  std::string device;
  /// Names are `namePrefix + "." + hint` (or `hint` alone when the prefix is
  /// empty), made unique by Graph::uniqueName.
  std::string namePrefix;
  /// Copied into Node::backward and Node::origin of created nodes.
  bool backward = false;
  std::string origin;

  /// Creates an op node. `attrs` may omit attributes that have defaults.
  /// Throws RuleError if the shape rule rejects the operands.
  Node *create(OpKind op, std::vector<Node *> inputs, AttrMap attrs = {},
               const std::string &hint = "");

  // Shorthands for the ops gradient rules use most.
  Node *add(Node *a, Node *b) { return create(OpKind::Add, {a, b}); }
  Node *sub(Node *a, Node *b) { return create(OpKind::Sub, {a, b}); }
  Node *mul(Node *a, Node *b) { return create(OpKind::Mul, {a, b}); }
  Node *div(Node *a, Node *b) { return create(OpKind::Div, {a, b}); }
  Node *neg(Node *a) { return create(OpKind::Neg, {a}); }
  Node *scale(Node *a, double value) { return create(OpKind::Scale, {a}, {{"value", value}}); }
  Node *exp(Node *a) { return create(OpKind::Exp, {a}); }
  Node *matmul(Node *a, Node *b, bool transposeA = false, bool transposeB = false) {
    return create(OpKind::MatMul, {a, b},
                  {{"transpose_a", transposeA}, {"transpose_b", transposeB}});
  }
  Node *transpose(Node *a, std::vector<int64_t> perm) {
    return create(OpKind::Transpose, {a}, {{"perm", std::move(perm)}});
  }
  Node *reshape(Node *a, Shape shape) {
    return create(OpKind::Reshape, {a}, {{"shape", std::move(shape)}});
  }
  Node *slice(Node *a, int64_t axis, int64_t start, int64_t end) {
    return create(OpKind::Slice, {a}, {{"axis", axis}, {"start", start}, {"end", end}});
  }
  Node *concat(Node *a, Node *b, int64_t axis) {
    return create(OpKind::Concat, {a, b}, {{"axis", axis}});
  }
  Node *concat(std::vector<Node *> parts, int64_t axis) {
    return create(OpKind::Concat, std::move(parts), {{"axis", axis}});
  }
  Node *sum(Node *a, std::vector<int64_t> axes, bool keepdims) {
    return create(OpKind::Sum, {a}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
  }
  Node *broadcastTo(Node *a, Shape shape) {
    return create(OpKind::BroadcastTo, {a}, {{"shape", std::move(shape)}});
  }
  Node *fill(double value, Shape shape) {
    return create(OpKind::Fill, {}, {{"value", value}, {"shape", std::move(shape)}});
  }
  /// A copy of `a` onto `dest` (the created node sits on `dest`), named
  /// `name` or, by default, copyName(a, dest); returns the existing copy when
  /// `a` already has one there.
  Node *copyTo(Node *a, const std::string &dest, const std::string &name = "");

  /// Sums `g` over the axes that broadcasting added or stretched so that the
  /// result has shape `target`; returns `g` itself when shapes already match.
  Node *reduceToShape(Node *g, const Shape &target);

private:
  Graph &graph_;
};

/// The name of the copy of `value` onto `device`: "z0.to.cpu1".
std::string copyName(const std::string &value, const std::string &device);

/// Fills in defaults and checks `attrs` against the op's schema. Throws
/// RuleError naming the attribute ("unknown attribute 'axiz'", "attribute
/// 'axis' must be int, got string", "missing required attribute 'shape'").
AttrMap completeAttrs(const OpInfo &info, AttrMap attrs);

/// Runs the op's shape rule on the types of `inputs`; checks arity first.
TensorType inferNodeType(const OpInfo &info, const std::vector<Node *> &inputs,
                         const AttrMap &attrs);

} // namespace mpc::ir
