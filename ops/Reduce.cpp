//===- ops/Reduce.cpp - sum, mean and their adjoint broadcast_to ---------===//
//
// sum and mean reduce over a set of axes (none listed: all axes), optionally
// keeping the reduced axes as size 1. broadcast_to is their adjoint: the
// gradient of a reduction broadcasts, the gradient of a broadcast reduces.
// Their gradient rules and reference kernels are in ir/ops/Reduce.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Reduce.h"

#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

/// For each axis of `t`: whether it is reduced. Checks range and uniqueness.
std::vector<bool> reducedAxes(const char *op, const TensorType &t, const AttrMap &attrs) {
  const std::vector<int64_t> &axes = getInts(attrs, "axes");
  std::vector<bool> reduced(size_t(t.rank()), axes.empty());
  for (int64_t a : axes) {
    int64_t n = axisOf(a, t, op);
    if (reduced[size_t(n)])
      throw RuleError(std::string(op) + " axis " + std::to_string(a) +
                      " repeated for " + t.str());
    reduced[size_t(n)] = true;
  }
  return reduced;
}

namespace {

TensorType inferReduce(const char *op, TypeOps ops, const AttrMap &attrs) {
  requireDType(ops[0], DType::F32, op, "x");
  std::vector<bool> reduced = reducedAxes(op, ops[0], attrs);
  Shape out;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) out.push_back(ops[0].shape[i]);
    else if (getBool(attrs, "keepdims")) out.push_back(1);
  }
  return {DType::F32, out};
}

/// Reducing over axis 0 reduces over the batch: the full-batch sum is the sum
/// of the micro-batch sums, the full-batch mean the mean of the micro-batch
/// means (micro-batches are equal).
BatchResult batchReduce(const BatchQuery &q, const char *op, BatchCombine combine) {
  std::vector<bool> reduced = reducedAxes(op, q.operands[0], q.attrs);
  if (reduced.empty() || !reduced[0]) return {};
  return {BatchClass::Reduced, combine, {}};
}

std::vector<AttrSpec> reduceAttrs() {
  return {attr("axes", AttrType::Ints, std::vector<int64_t>{},
               "axes to reduce, negative counting from the end; [] reduces all axes"),
          attr("keepdims", AttrType::Bool, false, "keep reduced axes as size 1")};
}

TensorType inferBroadcastTo(TypeOps ops, const AttrMap &attrs) {
  const TensorType &x = ops[0];
  requireDType(x, DType::F32, "broadcast_to", "x");
  const Shape &target = getInts(attrs, "shape");
  requireValidShape(target, "broadcast_to");
  TensorType result{DType::F32, target};
  bool ok = x.shape.size() <= target.size();
  for (size_t i = 0; ok && i < x.shape.size(); ++i) {
    int64_t d = x.shape[i], t = target[target.size() - x.shape.size() + i];
    ok = d == t || d == 1;
  }
  if (!ok) throw RuleError("cannot broadcast " + x.str() + " to " + result.str());
  return result;
}

} // namespace

void addReduceSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Sum, "sum", "Reduce", "sum of x over axes", {"x"});
    r.attrs = reduceAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferReduce("sum", o, a); };
    r.flops = flopsPerInput<1>;
    r.batch = [](const BatchQuery &q) { return batchReduce(q, "sum", BatchCombine::Sum); };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Mean, "mean", "Reduce", "mean of x over axes", {"x"});
    r.attrs = reduceAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferReduce("mean", o, a); };
    r.flops = flopsPerInput<1>;
    r.batch = [](const BatchQuery &q) { return batchReduce(q, "mean", BatchCombine::Mean); };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::BroadcastTo, "broadcast_to", "Reduce",
                            "x broadcast NumPy style to shape", {"x"});
    r.attrs = {attr("shape", AttrType::Ints, std::nullopt, "the result shape")};
    r.infer = inferBroadcastTo;
    r.batch = [](const BatchQuery &q) {
      BatchResult res = rowwiseBatchRule(q);
      res.microAttrs = q.attrs;
      res.microAttrs["shape"] = microShape(getInts(q.attrs, "shape"), q);
      return res;
    };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
