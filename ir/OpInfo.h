//===- ir/OpInfo.h - the record that defines one op ---------------------===//
//
// One op, one record: everything mpc knows about an op lives in its OpInfo,
// declared in ir/ops/<Family>.cpp next to the other ops of its family. The
// JSON reader checks arity and attributes against it, infer-shapes and the
// verifier run its shape rule, autodiff calls its gradient rule, the
// interpreter its reference kernel, auto placement its cost. Runtime kernels
// live in the backends and are keyed by the op's name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Attribute.h"
#include "ir/Batch.h"
#include "ir/RefTensor.h"
#include "ir/Type.h"
#include "ops/OpKind.h"

#include <span>
#include <string>
#include <vector>

namespace mpc::ir {

using ops::kNumOps;
using ops::OpKind;

class Builder;
struct Node;

enum OpTrait : unsigned {
  kElementwise = 1u << 0, ///< output element i depends on input elements i only
  kBroadcasts = 1u << 1,  ///< operands broadcast NumPy style to the result shape
  kStopsGradient = 1u << 2, ///< no gradient flows through (stop_gradient)
  /// An in-place update of persistent tensors (a parameter update, or
  /// batch_norm_update of running statistics): mutates `mutatedOperands`,
  /// runs once per step after every reader of the old values.
  kOptimizer = 1u << 3,
  kTransfer = 1u << 4,    ///< moves its operand to the node's device (copy)
  kLeafConst = 1u << 5,   ///< no operands; produces a constant (fill)
};

/// Shape/dtype rule: the result type from the operand types and the attributes
/// (all declared attributes are present). Throws RuleError with a message that
/// names both sides of a mismatch, e.g. "f32[100,2] x f32[3,1]".
using InferFn = TensorType (*)(std::span<const TensorType> operands, const AttrMap &attrs);

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

/// Floating point operations of one execution (for placement and --stats).
using FlopsFn = double (*)(std::span<const TensorType> operands, const TensorType &result,
                           const AttrMap &attrs);

struct OpInfo {
  OpKind kind;
  const char *name;   ///< JSON and kernel name, snake_case
  const char *family; ///< Elementwise, Linalg, ... (the ir/ops file it lives in)
  const char *doc;    ///< one line for `mpc ops` and docs/ops.md
  std::vector<std::string> operands; ///< operand names, in order
  int minArity = 0;                  ///< operands beyond minArity are optional
  /// The last name in `operands` repeats: the op takes from minArity up to
  /// kMaxVariadicArity operands (concat's x0, x1, ...).
  bool variadic = false;
  std::vector<AttrSpec> attrs;
  InferFn infer = nullptr;
  GradFn grad = nullptr; ///< nullptr: not differentiable (see docs/ops.md)
  RefFn reference = nullptr;
  FlopsFn flops = nullptr; ///< nullptr: one flop per result element
  /// How the op treats the batch axis under micro-batching (ir/Batch.h);
  /// nullptr: the op cannot take a batched operand.
  BatchFn batch = nullptr;
  unsigned traits = 0;
  std::vector<int> mutatedOperands; ///< operands a kOptimizer op updates in place
  /// Operands whose buffer the result may take over when the operand dies at
  /// this op and has exactly the result's type (codegen/InPlace.cpp). Listing
  /// an operand promises that every backend's kernel reads element i of it
  /// only to compute element i of the result, before writing that element, and
  /// declares no restrict on it; the alias tests (CpuKernelAlias in
  /// test/unit/runtime/KernelTest.cpp, CudaKernelAlias in
  /// test/unit/runtime_cuda/CudaKernelTest.cpp) prove it on every op case.
  std::vector<int> inPlaceOperands;

  /// The most operands the op takes; kMaxVariadicArity for a variadic op.
  int maxArity() const { return variadic ? kMaxVariadicArity : int(operands.size()); }
  bool acceptsArity(int n) const { return n >= minArity && n <= maxArity(); }
  /// "2", "2 to 4", "1 to 64": how many operands the op takes, for messages.
  std::string arityText() const;
  /// The name of operand `i` ("x3" for the repeated operand of a variadic op).
  std::string operandName(size_t i) const;
  bool has(OpTrait t) const { return (traits & t) != 0; }
  const AttrSpec *findAttr(const std::string &name) const;

  /// The most operands of a variadic op: the plan format's bound on the
  /// operand count of an op signature (plan/PlanReader.cpp).
  static constexpr int kMaxVariadicArity = 64;
};

/// The record of `kind`; every kind has exactly one.
const OpInfo &opInfo(OpKind kind);
/// The record named `name`, or nullptr.
const OpInfo *lookupOp(std::string_view name);
/// All records in OpList.def order.
std::span<const OpInfo> allOps();

/// Family tables, one per ir/ops/<Family>.cpp file; gathered by OpRegistry.cpp.
void addLinalgOps(std::vector<OpInfo> &table);
void addElementwiseOps(std::vector<OpInfo> &table);
void addReduceOps(std::vector<OpInfo> &table);
void addShapeOps(std::vector<OpInfo> &table);
void addSoftmaxOps(std::vector<OpInfo> &table);
void addLossOps(std::vector<OpInfo> &table);
void addNormOps(std::vector<OpInfo> &table);
void addEmbeddingOps(std::vector<OpInfo> &table);
void addDeviceOps(std::vector<OpInfo> &table);
void addOptimizerOps(std::vector<OpInfo> &table);
void addRandomOps(std::vector<OpInfo> &table);
void addConvOps(std::vector<OpInfo> &table);
void addPoolOps(std::vector<OpInfo> &table);

/// The mask stream of a dropout node: its `key` attribute, or its own name
/// when that is empty (ir/ops/Random.cpp).
std::string dropoutKeyName(const Node &n);

} // namespace mpc::ir
