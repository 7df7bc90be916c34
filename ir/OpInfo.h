//===- ir/OpInfo.h - the record that defines one op ---------------------===//
//
// An op's OpInfo is its schema (ops/OpSchema.h, ops/<Family>.cpp: the plain
// facts every layer shares) joined by OpKind with the two rules only the IR
// needs, written in ir/ops/<Family>.cpp: the gradient rule, which builds
// graph nodes, and the float64 reference kernel. The JSON reader checks arity
// and attributes against the schema, infer-shapes and the verifier run its
// shape rule, autodiff calls the gradient rule, the interpreter the
// reference kernel, auto placement the cost. Runtime kernels live in the
// backends and are keyed by the op's name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Attribute.h"
#include "ir/RefTensor.h"
#include "ir/Type.h"
#include "ops/OpSchema.h"

#include <array>
#include <span>
#include <string>
#include <vector>

namespace mpc::ir {

using ops::kNumOps;
using ops::OpKind;

class Builder;
struct Node;

using ops::FlopsFn;
using ops::InferFn;
using ops::kBroadcasts;
using ops::kCollective;
using ops::kElementwise;
using ops::kLeafConst;
using ops::kOptimizer;
using ops::kStopsGradient;
using ops::kTransfer;
using ops::OpSchema;
using ops::OpTrait;

/// Gradient rule, written with Builder calls on forward ops. `dOut` has the
/// node's result type. Returns one entry per operand: the gradient of the
/// loss with respect to that operand, or nullptr for "no gradient" (integer
/// labels). The returned gradient may have the *broadcast* shape; the autodiff
/// driver reduces it back to the operand shape. The builder is already set to
/// the forward node's device and a name prefix derived from the node.
using GradFn = std::vector<Node *> (*)(Builder &b, const Node &node, Node *dOut);

/// Reference kernel in float64: `out` arrives with its shape set and data
/// zero-filled. Optimizer ops also update their mutated operands in place.
using RefFn = void (*)(std::span<RefTensor *const> operands, const AttrMap &attrs,
                       RefTensor &out);

/// An op's schema (ops/OpSchema.h: operands, attributes, shape, batch and
/// cost rules, traits) joined with what the IR adds to it.
struct OpInfo : OpSchema {
  GradFn grad = nullptr; ///< nullptr: not differentiable (see docs/ops.md)
  RefFn reference = nullptr;
};

/// What one ir/ops/<Family>.cpp file adds to the schemas of its family,
/// indexed by OpKind.
struct OpRules {
  GradFn grad = nullptr;
  RefFn reference = nullptr;
};
using RuleTable = std::array<OpRules, kNumOps>;

/// The record of `kind`; every kind has exactly one.
const OpInfo &opInfo(OpKind kind);
/// The record named `name`, or nullptr.
const OpInfo *lookupOp(std::string_view name);
/// All records in OpList.def order.
std::span<const OpInfo> allOps();

/// Family rules, one per ir/ops/<Family>.cpp file; gathered by OpRegistry.cpp.
void addLinalgRules(RuleTable &table);
void addElementwiseRules(RuleTable &table);
void addReduceRules(RuleTable &table);
void addShapeRules(RuleTable &table);
void addSoftmaxRules(RuleTable &table);
void addAttentionRules(RuleTable &table);
void addLossRules(RuleTable &table);
void addNormRules(RuleTable &table);
void addEmbeddingRules(RuleTable &table);
void addDeviceRules(RuleTable &table);
void addOptimizerRules(RuleTable &table);
void addRandomRules(RuleTable &table);
void addConvRules(RuleTable &table);
void addPoolRules(RuleTable &table);
void addCollectiveRules(RuleTable &table);

/// The mask stream of a dropout node: its `key` attribute, or its own name
/// when that is empty (ir/ops/Random.cpp).
std::string dropoutKeyName(const Node &n);

} // namespace mpc::ir
