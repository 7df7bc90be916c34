//===- ops/OpSchema.h - the plain facts of one op ------------------------===//
//
// One op, one schema: the facts every layer needs are written once, in the
// op's OpSchema in ops/<Family>.cpp. They are plain data and functions over
// tensor types, with no graph: operand names and count, attributes with
// their types and defaults, the shape rule, the batch rule, traits, the
// operands updated or taken over in place, and the cost. The IR reads them
// (the JSON reader, the verifier, micro-batching, codegen), and so do the
// plan verifier and both backends, which may include ops/ but not ir/.
//
// The IR adds to each schema what needs a graph or float64 tensors: the
// gradient rule and the reference kernel (ir/OpInfo.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/Batch.h"
#include "ops/Layout.h"
#include "ops/OpKind.h"
#include "ops/Type.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpc::ops {

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
  /// One member of a collective (ops/Collective.h): operand i is the
  /// contribution of the group's device i, and may live on another device
  /// than the node; not a kernel (plans run it as a collective instruction).
  kCollective = 1u << 6,
};

/// Which float types an op takes, and what the autocast pass
/// (passes/Autocast.cpp, docs/precision.md) does with it under
/// --precision=bf16|fp16.
enum class Precision : uint8_t {
  /// Computes in f32 only: its float operands must be f32 (reductions,
  /// softmax, norms and their statistics, losses, optimizer updates,
  /// collectives). Autocast casts low-precision operands up to f32.
  F32Only,
  /// Takes f32, bf16 or f16 and computes in f32 (matmul and conv accumulate
  /// in f32); autocast runs it in the low type.
  Low,
  /// Takes f32, bf16 or f16 and computes in f32; autocast runs it in the
  /// type of its activations (elementwise and shape ops, copies).
  Follow,
  /// Its shape rule reads the types itself (cast).
  Any,
};

/// "f32", "f32 bf16 f16 (low)", ...: the types column of `mpc ops`.
const char *precisionText(Precision p);

/// Shape/dtype rule: the result type from the operand types and the attributes
/// (all declared attributes are present). Throws RuleError with a message that
/// names both sides of a mismatch, e.g. "f32[100,2] x f32[3,1]". The IR's
/// verifier and the plan verifier both run it.
using InferFn = TensorType (*)(std::span<const TensorType> operands, const AttrMap &attrs);

/// Floating point operations of one execution (for placement and --stats).
using FlopsFn = double (*)(std::span<const TensorType> operands, const TensorType &result,
                           const AttrMap &attrs);

struct OpSchema {
  OpKind kind;
  const char *name;   ///< JSON and kernel name, snake_case
  const char *family; ///< Elementwise, Linalg, ... (the ops/ file it lives in)
  const char *doc;    ///< one line for `mpc ops` and docs/ops.md
  std::vector<std::string> operands; ///< operand names, in order
  int minArity = 0;                  ///< operands beyond minArity are optional
  /// The last name in `operands` repeats: the op takes from minArity up to
  /// kMaxVariadicArity operands (concat's x0, x1, ...).
  bool variadic = false;
  std::vector<AttrSpec> attrs;
  InferFn infer = nullptr;
  FlopsFn flops = nullptr; ///< nullptr: one flop per result element
  /// How the op treats the batch axis under micro-batching (ops/Batch.h);
  /// nullptr: the op cannot take a batched operand.
  BatchFn batch = nullptr;
  /// How the op treats layouts in a tensor-parallel group (ops/Layout.h):
  /// which operand layouts it takes and its result's; nullptr: every
  /// operand replicated (replicatedRule).
  ShardFn shard = nullptr;
  unsigned traits = 0;
  /// The float types it takes (Precision above). A Low or Follow op's float
  /// operands share one type T and its result is in T; `infer` sees them
  /// as f32 (resultType does the substitution), so shape rules are written
  /// once, over f32.
  Precision precision = Precision::F32Only;
  /// Low ops: an operand that may stay f32 while the others are low, and
  /// then gives the result its type (matmul's accumulator c: weight
  /// gradients summed over micro-batches in f32); -1: none.
  int f32Accumulator = -1;
  std::vector<int> mutatedOperands; ///< operands a kOptimizer op updates in place
  /// Operands whose buffer the result may take over when the operand dies at
  /// this op and has exactly the result's type (codegen/InPlace.cpp). Listing
  /// an operand promises that every backend's kernel reads element i of it
  /// only to compute element i of the result, before writing that element, and
  /// declares no restrict on it; the alias tests (CpuKernelAlias in
  /// test/unit/runtime/KernelTest.cpp, CudaKernelAlias in
  /// test/unit/runtime_cuda/CudaKernelTest.cpp) prove it on every op case.
  std::vector<int> inPlaceOperands;
  /// Ops that draw a dropout mask (ops/DropoutMask.h: its attributes key,
  /// offset, parts, part, inner): the attribute holding the probability of
  /// dropping (an op whose probability is 0 draws nothing), and the shape
  /// of the tensor the mask covers (dropout: x; attention: its
  /// probabilities [..., T, S]). Micro-batching sets each part's offset
  /// from it, and the runtimes give such ops the run's seed and step.
  struct MaskRule {
    const char *probability = nullptr;
    Shape (*covers)(std::span<const TensorType> operands) = nullptr;
  } mask;
  /// Whether a node with these attributes draws a dropout mask.
  bool drawsMask(const AttrMap &attrs) const;

  /// The result type of the op over `operands`: `infer`, with the float
  /// types checked against `precision` first. Throws RuleError naming the
  /// operand whose type the op does not take. Every caller of a shape rule
  /// goes through this (the IR's builder and verifier, the plan verifier).
  TensorType resultType(std::span<const TensorType> operands, const AttrMap &attrs) const;
  bool takesLowPrecision() const { return precision != Precision::F32Only; }

  /// Floating point operations of one execution: `flops`, or one per
  /// result element without it (placement, --stats, traces).
  double flopCount(std::span<const TensorType> operands, const TensorType &result,
                   const AttrMap &attrs) const {
    return flops ? flops(operands, result, attrs) : double(result.numElements());
  }
  /// The most operands the op takes; kMaxVariadicArity for a variadic op.
  int maxArity() const { return variadic ? kMaxVariadicArity : int(operands.size()); }
  bool acceptsArity(int n) const { return n >= minArity && n <= maxArity(); }
  /// "2", "2 to 4", "1 to 64": how many operands the op takes, for messages.
  std::string arityText() const;
  /// The name of operand `i` ("x3" for the repeated operand of a variadic op).
  std::string operandName(size_t i) const;
  bool has(OpTrait t) const { return (traits & t) != 0; }
  const AttrSpec *findAttr(const std::string &name) const;
  /// The default of attribute `name`, which the schema declares with one
  /// (a model's optimizer settings default to the update ops' own).
  const AttrValue &defaultOf(const std::string &name) const;

  /// The most operands of a variadic op: the plan format's bound on the
  /// operand count of an op signature (plan/PlanReader.cpp).
  static constexpr int kMaxVariadicArity = 64;
};

/// The schema of `kind`; every kind has exactly one.
const OpSchema &schema(OpKind kind);
/// The schema named `name`, or nullptr.
const OpSchema *lookupSchema(std::string_view name);
/// All schemas in OpList.def order.
std::span<const OpSchema> allSchemas();

/// Family tables, one per ops/<Family>.cpp file; gathered by OpSchema.cpp.
void addLinalgSchemas(std::vector<OpSchema> &table);
void addElementwiseSchemas(std::vector<OpSchema> &table);
void addReduceSchemas(std::vector<OpSchema> &table);
void addShapeSchemas(std::vector<OpSchema> &table);
void addSoftmaxSchemas(std::vector<OpSchema> &table);
void addAttentionSchemas(std::vector<OpSchema> &table);
void addLossSchemas(std::vector<OpSchema> &table);
void addNormSchemas(std::vector<OpSchema> &table);
void addEmbeddingSchemas(std::vector<OpSchema> &table);
void addDeviceSchemas(std::vector<OpSchema> &table);
void addOptimizerSchemas(std::vector<OpSchema> &table);
void addRandomSchemas(std::vector<OpSchema> &table);
void addConvSchemas(std::vector<OpSchema> &table);
void addPoolSchemas(std::vector<OpSchema> &table);
void addCollectiveSchemas(std::vector<OpSchema> &table);

} // namespace mpc::ops
