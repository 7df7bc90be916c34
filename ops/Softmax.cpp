//===- ops/Softmax.cpp - softmax, log_softmax, causal_mask, softmax_grad -===//
//
// Normalisations along one axis, computed stably (the maximum along the axis
// is subtracted before exponentiating). softmax_grad is softmax's backward
// op, y * (dy - sum(dy * y, axis)); it is not differentiable itself.
// causal_mask, the attention mask that feeds softmax, sets the entries above
// the diagonal of the last two axes to a constant (-1e9: exp underflows to 0).
// Their gradient rules and reference kernels are in ir/ops/Softmax.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

namespace {

TensorType inferSoftmax(const char *op, TypeOps ops, const AttrMap &attrs) {
  requireDType(ops[0], DType::F32, op, "x");
  if (ops[0].rank() == 0) throw RuleError(std::string(op) + " needs rank >= 1, got " +
                                          ops[0].str());
  axisOf(getInt(attrs, "axis"), ops[0], op);
  return ops[0];
}

std::vector<AttrSpec> axisAttr() {
  return {attr("axis", AttrType::Int, int64_t(-1), "the axis to normalise, negative from the end")};
}

/// Normalising along any axis but the batch axis keeps rows independent.
BatchResult batchAlongAxis(const BatchQuery &q) {
  BatchResult res = rowwiseBatchRule(q);
  if (normalizeAxis(getInt(q.attrs, "axis"), q.operands[0].rank()) == 0)
    throw RuleError("it normalises along axis 0, the batch axis");
  return res;
}

TensorType inferCausalMask(TypeOps ops, const AttrMap &) {
  requireDType(ops[0], DType::F32, "causal_mask", "x");
  if (ops[0].rank() < 2)
    throw RuleError("causal_mask needs x of rank >= 2 (rows and columns), got " + ops[0].str());
  return ops[0];
}

/// Tensor parallelism (ops/Layout.h): the normalised axis whole.
ShardResult shardAlongAxis(const ShardQuery &q) {
  int64_t axis = *normalizeAxis(getInt(q.attrs, "axis"), q.result.rank());
  return rowwiseRule(q, std::span(&axis, 1), "softmax");
}

} // namespace

void addSoftmaxSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Softmax, "softmax", "Softmax",
                            "exp(x) / sum(exp(x)) along axis, computed stably", {"x"});
    r.attrs = axisAttr();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferSoftmax("softmax", o, a); };
    r.flops = flopsPerInput<5>;
    r.batch = batchAlongAxis;
    r.shard = shardAlongAxis;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::LogSoftmax, "log_softmax", "Softmax",
                            "x - log(sum(exp(x))) along axis, computed stably", {"x"});
    r.attrs = axisAttr();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferSoftmax("log_softmax", o, a); };
    r.flops = flopsPerInput<5>;
    r.batch = batchAlongAxis;
    r.shard = shardAlongAxis;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::CausalMask, "causal_mask", "Softmax",
                            "x with x[..., i, j] = value where j > i (above the diagonal of the "
                            "last two axes: row i, column j)",
                            {"x"});
    r.precision = Precision::Follow;
    r.attrs = {attr("value", AttrType::Float, -1e9, "the value of the masked entries")};
    r.infer = inferCausalMask;
    r.flops = noFlops;
    // Both backends copy the kept entries only when the result is another
    // buffer, so the result may take over x's.
    r.inPlaceOperands = {0};
    // The mask depends on the row index of axis -2: axis 0 must be another one.
    r.batch = [](const BatchQuery &q) {
      if (q.operands[0].rank() < 3)
        throw RuleError("its rows (axis -2) are axis 0, the batch axis, and the mask depends "
                        "on the row index");
      return rowwiseBatchRule(q);
    };
    // The mask depends on the row and column indices: both axes whole.
    r.shard = [](const ShardQuery &q) {
      int64_t whole[] = {int64_t(q.result.rank()) - 2, int64_t(q.result.rank()) - 1};
      return rowwiseRule(q, whole, "causal_mask");
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::SoftmaxGrad, "softmax_grad", "Softmax",
                            "y * (dy - sum(dy * y, axis)): the gradient of softmax given its "
                            "result y (not differentiable)",
                            {"y", "dy"});
    r.attrs = axisAttr();
    r.infer = [](TypeOps o, const AttrMap &a) {
      requireDType(o[1], DType::F32, "softmax_grad", "dy");
      TensorType y = inferSoftmax("softmax_grad", o.subspan(0, 1), a);
      requireSameType(o[0], o[1]);
      return y;
    };
    r.flops = flopsPerInput<4>;
    r.batch = batchAlongAxis;
    r.shard = shardAlongAxis;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
