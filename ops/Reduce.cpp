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

/// Tensor parallelism (ops/Layout.h): a split axis that is kept passes
/// through (renumbered); summing over it gives P, each device's sum of its
/// part. A mean over it needs it whole (the parts' means are not a partial
/// sum of the mean). Both are linear: P -> P.
ShardResult shardReduce(const ShardQuery &q, bool sum) {
  const Layout &l = q.layouts[0];
  if (l.partial()) return {{Layout::p()}, Layout::p(), {}, {}, {}};
  if (!l.split()) return replicatedRule(q);
  std::vector<bool> reduced = reducedAxes(sum ? "sum" : "mean", q.operands[0], q.attrs);
  if (reduced[size_t(l.axis)]) {
    if (sum) return {{l}, Layout::p(), {}, {}, {}};
    return replicatedRule(q, "mean reduces over the split axis " + std::to_string(l.axis));
  }
  int axis = l.axis;
  if (!getBool(q.attrs, "keepdims"))
    for (int i = 0; i < l.axis; ++i) axis -= reduced[size_t(i)] ? 1 : 0;
  return {{l}, Layout::s(axis), {}, {}, {}};
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
    r.shard = [](const ShardQuery &q) { return shardReduce(q, true); };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Mean, "mean", "Reduce", "mean of x over axes", {"x"});
    r.attrs = reduceAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferReduce("mean", o, a); };
    r.flops = flopsPerInput<1>;
    r.batch = [](const BatchQuery &q) { return batchReduce(q, "mean", BatchCombine::Mean); };
    r.shard = [](const ShardQuery &q) { return shardReduce(q, false); };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::BroadcastTo, "broadcast_to", "Reduce",
                            "x broadcast NumPy style to shape", {"x"});
    r.precision = Precision::Follow;
    r.attrs = {attr("shape", AttrType::Ints, std::nullopt, "the result shape")};
    r.infer = inferBroadcastTo;
    // Each element copied: a split passes through where x does not
    // broadcast, and the copies of a partial sum are partial sums. The
    // shape names the split axis: each device's is its part's.
    r.shard = [](const ShardQuery &q) {
      ShardResult res = elementwiseRule(q, Linearity::Sum);
      if (res.result.split()) {
        res.localAttrs = q.attrs;
        res.localAttrs["shape"] = localType(q.result, res.result, q.parts).shape;
      }
      return res;
    };
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
