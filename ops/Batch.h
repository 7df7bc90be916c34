//===- ops/Batch.h - how an op treats the batch axis ---------------------===//
//
// Micro-batching (passes/Microbatch.cpp) splits every model input into M
// equal parts along axis 0 and runs the forward graph once per part. That is
// only correct when every node treats the rows of axis 0 independently, up to
// the nodes that reduce over the batch (losses, sum/mean over axis 0), whose
// full-batch value is the sum (or mean) of the micro-batch values. Each op
// states which of these it is in its schema (OpSchema::batch); ops that have no
// batched operand never need a rule.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/Type.h"

#include <cstdint>
#include <span>

namespace mpc::ops {

/// What a value is with respect to the batch.
enum class BatchClass : uint8_t {
  Unbatched, ///< depends on no input (params, constants): shared by micro-batches
  Batched,   ///< axis 0 is the batch; row i depends on input rows i only
  Reduced,   ///< a sum or mean over the whole batch (a loss)
};

/// How the full-batch value of a Reduced node follows from its micro-batch values.
enum class BatchCombine : uint8_t { Sum, Mean };

/// What an op's batch rule is asked. Operands are Unbatched or Batched
/// (Reduced operands are resolved by the caller), at least one Batched.
struct BatchQuery {
  std::span<const BatchClass> classes;
  std::span<const TensorType> operands;
  const TensorType &result;
  const AttrMap &attrs;
  int64_t batch = 0;        ///< rows of the full batch (N)
  int64_t microbatches = 1; ///< M; a micro-batch has N / M rows
};

struct BatchResult {
  BatchClass cls = BatchClass::Batched;
  BatchCombine combine = BatchCombine::Sum; ///< for Reduced
  /// Attributes of the micro-batch copy, where they name the batch size
  /// (reshape's and broadcast_to's `shape`); empty: unchanged.
  AttrMap microAttrs;
};

/// The rule: throws RuleError with the reason when the op mixes rows of the
/// batch ("contracts over the batch axis of operand 'a'").
using BatchFn = BatchResult (*)(const BatchQuery &q);

/// Rule of row-wise ops (elementwise, with NumPy broadcasting): batched
/// operands keep axis 0 as the result's axis 0; an unbatched operand must
/// broadcast along it (size 1 or lower rank), or its rows would meet
/// different rows of the batch in each micro-batch.
BatchResult rowwiseBatchRule(const BatchQuery &q);

/// `shape` with axis 0 set to the micro-batch rows when it is the batch size.
Shape microShape(const Shape &shape, const BatchQuery &q);

} // namespace mpc::ops
