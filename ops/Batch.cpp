//===- ops/Batch.cpp - the shared batch rules ----------------------------===//
#include "ops/Batch.h"

#include "support/Error.h"

namespace mpc::ops {

BatchResult rowwiseBatchRule(const BatchQuery &q) {
  const int64_t rank = q.result.rank();
  for (size_t i = 0; i < q.operands.size(); ++i) {
    const TensorType &t = q.operands[i];
    bool aligned = t.rank() == rank && rank > 0; // its axis 0 is the result's axis 0
    if (q.classes[i] == BatchClass::Batched) {
      if (!aligned)
        throw RuleError("batched operand " + std::to_string(i) + " " + t.str() +
                        " would broadcast into " + q.result.str() +
                        ", moving the batch off axis 0");
    } else if (aligned && t.shape[0] != 1) {
      throw RuleError("operand " + std::to_string(i) + " " + t.str() +
                      " is not batched data but has " + std::to_string(t.shape[0]) +
                      " rows along the batch axis: each micro-batch would meet all of them");
    }
  }
  return {};
}

Shape microShape(const Shape &shape, const BatchQuery &q) {
  Shape out = shape;
  if (!out.empty() && out[0] == q.batch) out[0] = q.batch / q.microbatches;
  return out;
}

} // namespace mpc::ops
