//===- ops/Layout.h - how a value spreads over a tensor-parallel group ----===//
//
// In a device group mapped to t devices (tensor parallelism,
// passes/TensorParallel.cpp), every value has a layout:
//   R     replicated: each device holds the whole value;
//   S(d)  split: device i holds part i of t equal parts along axis d;
//   P     partial: each device holds a tensor of the whole shape, and the
//         value is their sum, still to be reduced.
// Each op states in its schema (OpSchema::shard) which operand layouts it
// takes and which layout its result then has. The rule is asked with the
// operands' current layouts and answers with the layouts it needs; where
// they differ the pass inserts a redistribution:
//   P -> R all_reduce, P -> S reduce_scatter, S -> R all_gather,
//   R -> S a local slice, R -> P a local zero on all but the first device.
// A rule never fails: an op that cannot take a layout asks for R, which is
// always correct (every device then computes the whole value), and says
// why in ShardResult::why, which errors about declared layouts quote.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/Type.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mpc::ops {

struct Layout {
  enum Kind : uint8_t { Replicated, Split, Partial };
  Kind kind = Replicated;
  int axis = -1; ///< Split: the axis; -1 otherwise
  static Layout r() { return {}; }
  static Layout s(int axis) { return {Split, axis}; }
  static Layout p() { return {Partial, -1}; }
  bool replicated() const { return kind == Replicated; }
  bool split() const { return kind == Split; }
  bool partial() const { return kind == Partial; }
  std::string str() const; ///< "R", "S(1)", "P"
  bool operator==(const Layout &) const = default;
};

/// Parses Layout::str()'s spelling; false for anything else.
bool parseLayout(const std::string &text, Layout &out);

/// The type each of `parts` devices holds of a value of logical type `t` in
/// layout `l`: axis d divided by `parts` for S(d), the whole type otherwise.
/// Throws RuleError when the axis does not exist or does not divide.
TensorType localType(const TensorType &t, const Layout &l, int64_t parts);

/// What a sharding rule is asked: the logical (whole) types of the operands
/// and of the result, the operands' current layouts, and the group size.
struct ShardQuery {
  std::span<const TensorType> operands;
  std::span<const Layout> layouts;
  const TensorType &result;
  const AttrMap &attrs;
  int64_t parts = 2;
};

struct ShardResult {
  std::vector<Layout> operands; ///< the layout each operand must have
  Layout result;
  /// The attributes of each device's node where they name sizes of a split
  /// value (reshape's `shape`); empty: unchanged.
  AttrMap localAttrs;
  /// An int attribute that holds each device's index in the group (dropout's
  /// `part`: which part of the whole its elements are); empty: none.
  std::string memberAttr;
  /// Why an operand's layout was refused ("layer_norm normalises axis 2"),
  /// for errors about layouts the user declared; empty when all were taken.
  std::string why;
};

using ShardFn = ShardResult (*)(const ShardQuery &q);

/// Every operand and the result replicated: the rule of an op without one.
ShardResult replicatedRule(const ShardQuery &q, std::string why = "");

/// How an elementwise op treats partial sums (P): which operands may be P.
enum class Linearity : uint8_t {
  None,    ///< P operands must be reduced first
  Sum,     ///< linear in all operands together (add, sub, neg, scale): all P -> P
  Product, ///< linear in each operand alone (mul): one P, the others R -> P
  First,   ///< linear in the first operand (div): a P, the others R -> P
};

/// The rule of elementwise ops with NumPy broadcasting: a split on a result
/// axis passes through (operands that broadcast along it stay R); P as
/// `linearity` allows; else R.
ShardResult elementwiseRule(const ShardQuery &q, Linearity linearity);

/// Ops that normalise or index along `axes` of operand 0 (softmax's axis,
/// layer_norm's trailing axes): as elementwise without partial sums, with
/// those axes kept whole.
ShardResult rowwiseRule(const ShardQuery &q, std::span<const int64_t> wholeAxes,
                        const char *op);

/// The rule of an optimizer update: every operand of the parameter's shape
/// takes the parameter's layout (operand 0); other operands (a step
/// counter) are R. A P gradient is reduced first.
ShardResult updateRule(const ShardQuery &q);

} // namespace mpc::ops
