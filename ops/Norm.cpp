//===- ops/Norm.cpp - layer_norm, batch_norm and their backward ops ------===//
//
// layer_norm normalises each row (the last axis) of x to zero mean and unit
// biased variance, then scales by gamma and shifts by beta, as
// torch.nn.functional.layer_norm over the last dimension. Its gradient uses
// two backward ops, layer_norm_grad (dx) and layer_norm_gamma_grad (dgamma);
// dbeta is a plain sum. The backward ops recompute the row statistics from x
// rather than saving them, so the forward op has one result.
//
// batch_norm normalises each channel (the elements of x with one index on
// `axis`) with MXNet's BatchNorm attributes. With three operands it uses the
// batch's statistics (training); with running_mean and running_var as
// operands four and five it uses those (inference, use_global_stats). The
// batch-norm-stats pass decides which and adds batch_norm_update, which
// folds the batch statistics into the running ones in place, once per step
// (MXNet's momentum: running = momentum * running + (1 - momentum) * batch,
// with the biased batch variance, as MXNet's CPU kernel). Its backward ops
// mirror layer_norm's, over channels instead of rows, in either form.
//
// Their gradient rules and reference kernels are in ir/ops/Norm.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

#include <algorithm>

namespace mpc::ops {

using namespace helpers;

namespace {

/// Checks x f32 of rank >= 1 and each of `params` f32[D], D = x.shape[-1].
void checkRowsAndParams(const char *op, const TensorType &x,
                        std::initializer_list<std::pair<const char *, const TensorType *>> params) {
  requireDType(x, DType::F32, op, "x");
  if (x.rank() < 1) throw RuleError(std::string(op) + " needs x of rank >= 1, got " + x.str());
  for (auto [name, t] : params) {
    requireDType(*t, DType::F32, op, name);
    if (t->rank() != 1 || t->shape[0] != x.shape.back())
      throw RuleError(std::string(op) + " operand '" + name + "' must be f32[" +
                      std::to_string(x.shape.back()) + "] (the last axis of x): shape mismatch: " +
                      pairStr(x, *t));
  }
}

/// Checks eps >= 0 (as torch, 0 is allowed; a constant row then gives NaN).
void checkEps(const char *op, const AttrMap &attrs) {
  double eps = getFloat(attrs, "eps");
  if (!(eps >= 0))
    throw RuleError(std::string(op) + " eps must be >= 0, got " + attrValueStr(eps));
}

AttrSpec epsAttr() {
  return attr("eps", AttrType::Float, 1e-5, "added to the variance before the square root");
}

/// Rows are independent: a batched x keeps its axis 0 as long as that is not
/// the normalised axis; gamma and beta (rank 1) must be shared.
BatchResult batchRows(const BatchQuery &q) {
  if (q.operands[0].rank() < 2)
    throw RuleError("it normalises along axis 0, the batch axis");
  return rowwiseBatchRule(q);
}

// --- batch_norm ---------------------------------------------------------

/// The channel axis of a batch_norm x (rank >= 2) and its split around it.
AxisSplit channelsOf(const char *op, const TensorType &x, const AttrMap &a) {
  requireDType(x, DType::F32, op, "x");
  if (x.rank() < 2)
    throw RuleError(std::string(op) + " needs x of rank >= 2 ([N, C, ...]), got " + x.str());
  return splitAt(x.shape, axisOf(getInt(a, "axis"), x, op));
}

/// Checks each of `vecs` is f32[C], C the channel count of x.
void checkChannelVectors(const char *op, const TensorType &x, int64_t c,
                         std::initializer_list<std::pair<const char *, const TensorType *>> vecs) {
  for (auto [name, t] : vecs) {
    requireDType(*t, DType::F32, op, name);
    if (t->rank() != 1 || t->shape[0] != c)
      throw RuleError(std::string(op) + " operand '" + name + "' must be f32[" +
                      std::to_string(c) + "] (x's channel axis): shape mismatch: " +
                      pairStr(x, *t));
  }
}

/// Operands `first` and `first + 1` of a batch_norm op, when given, are the
/// running mean and variance: both or neither.
void checkRunningOperands(const char *op, TypeOps o, size_t first, int64_t c) {
  if (o.size() == first + 1)
    throw RuleError(std::string(op) +
                    " takes operands running_mean and running_var together, got only "
                    "running_mean");
  if (o.size() == first + 2)
    checkChannelVectors(op, o[0], c, {{"running_mean", &o[first]}, {"running_var", &o[first + 1]}});
}

void checkMomentum(const char *op, const AttrMap &a) {
  double m = getFloat(a, "momentum");
  if (!(m >= 0 && m <= 1))
    throw RuleError(std::string(op) + " momentum must be in [0, 1], got " + attrValueStr(m));
}

AttrSpec axisAttr() {
  return attr("axis", AttrType::Int, int64_t(1),
              "the channel axis (negative counts from the end); default 1, NCHW's C");
}

/// batch_norm and its backward ops: x batched with its channel axis not the
/// batch axis; gamma, beta and the running statistics shared. With batch
/// statistics each micro-batch is normalised with its own (GPipe's
/// semantics, docs/pipelining.md).
void checkBatchedChannels(const BatchQuery &q, std::initializer_list<size_t> data) {
  for (size_t i = 0; i < q.classes.size(); ++i)
    if (q.classes[i] != BatchClass::Unbatched &&
        std::find(data.begin(), data.end(), i) == data.end())
      throw RuleError("operand " + std::to_string(i) + " " + q.operands[i].str() +
                      " is batched, but batch_norm's per-channel operands are shared");
  if (normalizeAxis(getInt(q.attrs, "axis"), q.operands[0].rank()) == 0)
    throw RuleError("its channel axis is axis 0, the batch axis");
}

void addBatchNormSchemas(std::vector<OpSchema> &t);

/// Tensor parallelism (ops/Layout.h): layer_norm's rows split any way but
/// along the normalised last axis.
ShardResult shardRows(const ShardQuery &q) {
  int64_t last = int64_t(q.result.rank()) - 1;
  return rowwiseRule(q, std::span(&last, 1), "layer_norm");
}

} // namespace

void addNormSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::LayerNorm, "layer_norm", "Norm",
                            "(x - mean) / sqrt(var + eps) * gamma + beta over the last axis of x "
                            "(biased variance), gamma and beta of that axis' length",
                            {"x", "gamma", "beta"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm", o[0], {{"gamma", &o[1]}, {"beta", &o[2]}});
      checkEps("layer_norm", a);
      return o[0];
    };
    r.flops = flopsPerElement<8>;
    r.batch = batchRows;
    r.shard = shardRows;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::LayerNormGrad, "layer_norm_grad", "Norm",
                            "dx of layer_norm: rstd * (g - mean(g) - xhat * mean(g * xhat)) per "
                            "row, g = dy * gamma (not differentiable)",
                            {"x", "gamma", "dy"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm_grad", o[0], {{"gamma", &o[1]}});
      requireDType(o[2], DType::F32, "layer_norm_grad", "dy");
      requireSameType(o[0], o[2]);
      checkEps("layer_norm_grad", a);
      return o[0];
    };
    r.flops = flopsPerElement<10>;
    r.batch = batchRows;
    r.shard = shardRows;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::LayerNormGammaGrad, "layer_norm_gamma_grad", "Norm",
                            "dgamma of layer_norm: the sum over rows of dy * xhat, f32[D] "
                            "(not differentiable)",
                            {"x", "dy"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm_gamma_grad", o[0], {});
      requireDType(o[1], DType::F32, "layer_norm_gamma_grad", "dy");
      requireSameType(o[0], o[1]);
      checkEps("layer_norm_gamma_grad", a);
      return TensorType{DType::F32, {o[0].shape.back()}};
    };
    r.flops = flopsPerInput<6>;
    // A sum over the rows, so over the batch: the full-batch dgamma is the sum
    // of the micro-batch ones.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      batchRows(q);
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
  addBatchNormSchemas(t);
}

} // namespace mpc::ops

namespace mpc::ops {

using namespace helpers;

namespace {

void addBatchNormSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::BatchNorm, "batch_norm", "Norm",
                            "(x - mean) / sqrt(var + eps) * gamma + beta per channel (x's "
                            "`axis`), with the batch's statistics (biased variance) or, given as "
                            "operands, the running ones (MXNet's BatchNorm)",
                            {"x", "gamma", "beta", "running_mean", "running_var"});
    r.minArity = 3;
    r.attrs = {epsAttr(),
               attr("momentum", AttrType::Float, 0.9,
                    "MXNet's: running = momentum * running + (1 - momentum) * batch "
                    "(PyTorch's momentum 0.1 is 0.9 here)"),
               axisAttr(),
               attr("use_global_stats", AttrType::Bool, false,
                    "normalise with the running statistics in training too, and do not "
                    "update them"),
               attr("running_mean", AttrType::String, std::string(""),
                    "the running mean's state name; \"\": <node name>.running_mean"),
               attr("running_var", AttrType::String, std::string(""),
                    "the running variance's state name; \"\": <node name>.running_var")};
    r.infer = [](TypeOps o, const AttrMap &a) {
      AxisSplit s = channelsOf("batch_norm", o[0], a);
      checkChannelVectors("batch_norm", o[0], s.size, {{"gamma", &o[1]}, {"beta", &o[2]}});
      checkRunningOperands("batch_norm", o, 3, s.size);
      checkEps("batch_norm", a);
      checkMomentum("batch_norm", a);
      return o[0];
    };
    r.flops = flopsPerElement<8>;
    r.batch = [](const BatchQuery &q) -> BatchResult {
      checkBatchedChannels(q, {0});
      return {BatchClass::Batched, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::BatchNormGrad, "batch_norm_grad", "Norm",
                            "dx of batch_norm: rstd * (g - mean(g) - xhat * mean(g * xhat)) per "
                            "channel, g = dy * gamma; with running statistics dy * gamma * rstd "
                            "(not differentiable)",
                            {"x", "gamma", "dy", "running_mean", "running_var"});
    r.minArity = 3;
    r.attrs = {epsAttr(), axisAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      AxisSplit s = channelsOf("batch_norm_grad", o[0], a);
      checkChannelVectors("batch_norm_grad", o[0], s.size, {{"gamma", &o[1]}});
      requireDType(o[2], DType::F32, "batch_norm_grad", "dy");
      requireSameType(o[0], o[2]);
      checkRunningOperands("batch_norm_grad", o, 3, s.size);
      checkEps("batch_norm_grad", a);
      return o[0];
    };
    r.flops = flopsPerElement<10>;
    r.batch = [](const BatchQuery &q) -> BatchResult {
      checkBatchedChannels(q, {0, 2});
      return {BatchClass::Batched, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::BatchNormGammaGrad, "batch_norm_gamma_grad", "Norm",
                            "dgamma of batch_norm: the sum over each channel of dy * xhat, f32[C] "
                            "(not differentiable)",
                            {"x", "dy", "running_mean", "running_var"});
    r.minArity = 2;
    r.attrs = {epsAttr(), axisAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      AxisSplit s = channelsOf("batch_norm_gamma_grad", o[0], a);
      requireDType(o[1], DType::F32, "batch_norm_gamma_grad", "dy");
      requireSameType(o[0], o[1]);
      checkRunningOperands("batch_norm_gamma_grad", o, 2, s.size);
      checkEps("batch_norm_gamma_grad", a);
      return TensorType{DType::F32, {s.size}};
    };
    r.flops = flopsPerInput<6>;
    // A sum over the channel's elements, so over the batch: the full-batch
    // dgamma is the sum of the micro-batch ones.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      checkBatchedChannels(q, {0, 1});
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::BatchNormUpdate, "batch_norm_update", "Norm",
                            "in-place running = momentum * running + (1 - momentum) * batch "
                            "statistic of x per channel (mean; biased variance); returns the new "
                            "running mean",
                            {"running_mean", "running_var", "x"});
    r.attrs = {attr("momentum", AttrType::Float, 0.9,
                    "weight of the old running value (MXNet's convention)"),
               axisAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      AxisSplit s = channelsOf("batch_norm_update", o[2], a);
      checkChannelVectors("batch_norm_update", o[2], s.size,
                          {{"running_mean", &o[0]}, {"running_var", &o[1]}});
      checkMomentum("batch_norm_update", a);
      return o[0];
    };
    r.flops = flopsPerInput<3>;
    // Under micro-batching each micro-batch's replica folds in its own
    // statistics, in micro-batch order; nothing combines their results.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      if (q.classes[0] != BatchClass::Unbatched || q.classes[1] != BatchClass::Unbatched)
        throw RuleError("the running statistics are batched");
      if (normalizeAxis(getInt(q.attrs, "axis"), q.operands[2].rank()) == 0)
        throw RuleError("its channel axis is axis 0, the batch axis");
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    r.traits = kOptimizer;
    r.mutatedOperands = {0, 1};
    t.push_back(std::move(r));
  }
}

} // namespace

} // namespace mpc::ops
