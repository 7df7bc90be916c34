//===- ir/ops/Norm.cpp - layer_norm, batch_norm and their backward ops ---===//
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
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <algorithm>

namespace mpc::ir {

using namespace ophelpers;

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

/// Mean and 1/sqrt(var + eps) (biased variance) of the D values at `x`.
struct RowStats {
  double mean = 0, rstd = 0;
};
RowStats rowStats(const double *x, int64_t d, double eps) {
  RowStats s;
  for (int64_t j = 0; j < d; ++j) s.mean += x[j];
  s.mean /= double(d);
  double var = 0;
  for (int64_t j = 0; j < d; ++j) var += (x[j] - s.mean) * (x[j] - s.mean);
  var /= double(d);
  s.rstd = 1.0 / std::sqrt(var + eps);
  return s;
}

/// Calls f(row index, pointer offset) for every row of a [..., D] tensor.
template <typename F> void forEachRow(const RefTensor &x, F f) {
  int64_t d = x.shape.back();
  if (d == 0) return;
  int64_t rows = int64_t(x.data.size()) / d;
  for (int64_t r = 0; r < rows; ++r) f(size_t(r * d), d);
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

/// Calls f(flat index) for every element of channel `ch`, in row-major order.
template <typename F> void forEachInChannel(const AxisSplit &s, int64_t ch, F f) {
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) f(size_t((o * s.size + ch) * s.inner + i));
}

/// Per-channel mean and 1/sqrt(var + eps): of x's elements of the channel
/// (biased variance, accumulated in double), or the running statistics when
/// given.
struct ChannelStats {
  std::vector<double> mean, var, rstd;
};
ChannelStats channelStats(const RefTensor &x, const AxisSplit &s, double eps,
                          const RefTensor *runMean = nullptr, const RefTensor *runVar = nullptr) {
  ChannelStats st;
  size_t c = size_t(s.size);
  st.mean.assign(c, 0.0);
  st.var.assign(c, 0.0);
  st.rstd.assign(c, 0.0);
  double count = double(s.outer * s.inner);
  for (int64_t ch = 0; ch < s.size; ++ch) {
    size_t k = size_t(ch);
    if (runMean) {
      st.mean[k] = runMean->data[k];
      st.var[k] = runVar->data[k];
    } else {
      forEachInChannel(s, ch, [&](size_t i) { st.mean[k] += x.data[i]; });
      st.mean[k] /= count;
      forEachInChannel(s, ch, [&](size_t i) {
        double d = x.data[i] - st.mean[k];
        st.var[k] += d * d;
      });
      st.var[k] /= count;
    }
    st.rstd[k] = 1.0 / std::sqrt(st.var[k] + eps);
  }
  return st;
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

void addBatchNormOps(std::vector<OpInfo> &t);

} // namespace

void addNormOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::LayerNorm, "layer_norm", "Norm",
                      "(x - mean) / sqrt(var + eps) * gamma + beta over the last axis of x "
                      "(biased variance), gamma and beta of that axis' length",
                      {"x", "gamma", "beta"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm", o[0], {{"gamma", &o[1]}, {"beta", &o[2]}});
      checkEps("layer_norm", a);
      return o[0];
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      Node *x = n.inputs[0], *gamma = n.inputs[1];
      AttrMap eps = {{"eps", getFloat(n.attrs, "eps")}};
      Node *dx = b.create(OpKind::LayerNormGrad, {x, gamma, dy}, eps);
      Node *dgamma = b.create(OpKind::LayerNormGammaGrad, {x, dy}, eps);
      std::vector<int64_t> lead;
      for (int64_t i = 0; i + 1 < x->type.rank(); ++i) lead.push_back(i);
      Node *dbeta = lead.empty() ? dy : b.sum(dy, lead, /*keepdims=*/false);
      return {dx, dgamma, dbeta};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &gamma = *o[1], &beta = *o[2];
      double eps = getFloat(a, "eps");
      forEachRow(x, [&](size_t base, int64_t d) {
        RowStats s = rowStats(&x.data[base], d, eps);
        for (int64_t j = 0; j < d; ++j) {
          double xhat = (x.data[base + size_t(j)] - s.mean) * s.rstd;
          out.data[base + size_t(j)] = xhat * gamma.data[size_t(j)] + beta.data[size_t(j)];
        }
      });
    };
    r.flops = flopsPerElement<8>;
    r.batch = batchRows;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::LayerNormGrad, "layer_norm_grad", "Norm",
                      "dx of layer_norm: rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, "
                      "g = dy * gamma (not differentiable)",
                      {"x", "gamma", "dy"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm_grad", o[0], {{"gamma", &o[1]}});
      requireDType(o[2], DType::F32, "layer_norm_grad", "dy");
      requireSameType(o[0], o[2]);
      checkEps("layer_norm_grad", a);
      return o[0];
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &gamma = *o[1], &dy = *o[2];
      double eps = getFloat(a, "eps");
      forEachRow(x, [&](size_t base, int64_t d) {
        RowStats s = rowStats(&x.data[base], d, eps);
        double meanG = 0, meanGX = 0;
        for (int64_t j = 0; j < d; ++j) {
          size_t i = base + size_t(j);
          double g = dy.data[i] * gamma.data[size_t(j)];
          meanG += g;
          meanGX += g * (x.data[i] - s.mean) * s.rstd;
        }
        meanG /= double(d);
        meanGX /= double(d);
        for (int64_t j = 0; j < d; ++j) {
          size_t i = base + size_t(j);
          double xhat = (x.data[i] - s.mean) * s.rstd;
          double g = dy.data[i] * gamma.data[size_t(j)];
          out.data[i] = s.rstd * (g - meanG - xhat * meanGX);
        }
      });
    };
    r.flops = flopsPerElement<10>;
    r.batch = batchRows;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::LayerNormGammaGrad, "layer_norm_gamma_grad", "Norm",
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
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &dy = *o[1];
      double eps = getFloat(a, "eps");
      // Rows in order: out[j] accumulates row 0 first (a fixed order).
      forEachRow(x, [&](size_t base, int64_t d) {
        RowStats s = rowStats(&x.data[base], d, eps);
        for (int64_t j = 0; j < d; ++j) {
          size_t i = base + size_t(j);
          out.data[size_t(j)] += dy.data[i] * (x.data[i] - s.mean) * s.rstd;
        }
      });
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
  addBatchNormOps(t);
}

} // namespace mpc::ir

namespace mpc::ir {

using namespace ophelpers;

namespace {

void addBatchNormOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::BatchNorm, "batch_norm", "Norm",
                      "(x - mean) / sqrt(var + eps) * gamma + beta per channel (x's `axis`), "
                      "with the batch's statistics (biased variance) or, given as operands, "
                      "the running ones (MXNet's BatchNorm)",
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
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      Node *x = n.inputs[0], *gamma = n.inputs[1];
      AttrMap attrs = {{"eps", getFloat(n.attrs, "eps")}, {"axis", getInt(n.attrs, "axis")}};
      // With running statistics as operands they are constants of the step
      // (use_global_stats): no gradient flows into them.
      std::vector<Node *> running(n.inputs.begin() + 3, n.inputs.end());
      std::vector<Node *> gradOps = {x, gamma, dy};
      gradOps.insert(gradOps.end(), running.begin(), running.end());
      Node *dx = b.create(OpKind::BatchNormGrad, gradOps, attrs);
      std::vector<Node *> gammaOps = {x, dy};
      gammaOps.insert(gammaOps.end(), running.begin(), running.end());
      Node *dgamma = b.create(OpKind::BatchNormGammaGrad, gammaOps, attrs);
      int64_t axis = *normalizeAxis(getInt(n.attrs, "axis"), x->type.rank());
      std::vector<int64_t> others;
      for (int64_t i = 0; i < x->type.rank(); ++i)
        if (i != axis) others.push_back(i);
      Node *dbeta = b.sum(dy, others, /*keepdims=*/false);
      std::vector<Node *> grads = {dx, dgamma, dbeta};
      grads.resize(n.inputs.size(), nullptr);
      return grads;
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &gamma = *o[1], &beta = *o[2];
      AxisSplit s = splitAt(x.shape, *normalizeAxis(getInt(a, "axis"), int64_t(x.shape.size())));
      bool running = o.size() == 5;
      ChannelStats st = channelStats(x, s, getFloat(a, "eps"), running ? o[3] : nullptr,
                                     running ? o[4] : nullptr);
      for (int64_t ch = 0; ch < s.size; ++ch) {
        size_t k = size_t(ch);
        forEachInChannel(s, ch, [&](size_t i) {
          out.data[i] = (x.data[i] - st.mean[k]) * st.rstd[k] * gamma.data[k] + beta.data[k];
        });
      }
    };
    r.flops = flopsPerElement<8>;
    r.batch = [](const BatchQuery &q) -> BatchResult {
      checkBatchedChannels(q, {0});
      return {BatchClass::Batched, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::BatchNormGrad, "batch_norm_grad", "Norm",
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
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &gamma = *o[1], &dy = *o[2];
      AxisSplit s = splitAt(x.shape, *normalizeAxis(getInt(a, "axis"), int64_t(x.shape.size())));
      bool running = o.size() == 5;
      ChannelStats st = channelStats(x, s, getFloat(a, "eps"), running ? o[3] : nullptr,
                                     running ? o[4] : nullptr);
      double count = double(s.outer * s.inner);
      for (int64_t ch = 0; ch < s.size; ++ch) {
        size_t k = size_t(ch);
        double gk = gamma.data[k], rstd = st.rstd[k], mean = st.mean[k];
        if (running) {
          forEachInChannel(s, ch, [&](size_t i) { out.data[i] = dy.data[i] * gk * rstd; });
          continue;
        }
        double meanG = 0, meanGX = 0;
        forEachInChannel(s, ch, [&](size_t i) {
          double g = dy.data[i] * gk;
          meanG += g;
          meanGX += g * (x.data[i] - mean) * rstd;
        });
        meanG /= count;
        meanGX /= count;
        forEachInChannel(s, ch, [&](size_t i) {
          double xhat = (x.data[i] - mean) * rstd;
          out.data[i] = rstd * (dy.data[i] * gk - meanG - xhat * meanGX);
        });
      }
    };
    r.flops = flopsPerElement<10>;
    r.batch = [](const BatchQuery &q) -> BatchResult {
      checkBatchedChannels(q, {0, 2});
      return {BatchClass::Batched, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::BatchNormGammaGrad, "batch_norm_gamma_grad", "Norm",
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
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &dy = *o[1];
      AxisSplit s = splitAt(x.shape, *normalizeAxis(getInt(a, "axis"), int64_t(x.shape.size())));
      bool running = o.size() == 4;
      ChannelStats st = channelStats(x, s, getFloat(a, "eps"), running ? o[2] : nullptr,
                                     running ? o[3] : nullptr);
      for (int64_t ch = 0; ch < s.size; ++ch) {
        size_t k = size_t(ch);
        forEachInChannel(s, ch, [&](size_t i) {
          out.data[k] += dy.data[i] * (x.data[i] - st.mean[k]) * st.rstd[k];
        });
      }
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
    OpInfo r = makeOp(OpKind::BatchNormUpdate, "batch_norm_update", "Norm",
                      "in-place running = momentum * running + (1 - momentum) * batch statistic "
                      "of x per channel (mean; biased variance); returns the new running mean",
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
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      RefTensor &mean = *o[0], &var = *o[1];
      const RefTensor &x = *o[2];
      AxisSplit s = splitAt(x.shape, *normalizeAxis(getInt(a, "axis"), int64_t(x.shape.size())));
      ChannelStats st = channelStats(x, s, 0.0);
      double m = getFloat(a, "momentum");
      for (size_t k = 0; k < mean.data.size(); ++k) {
        mean.data[k] = m * mean.data[k] + (1.0 - m) * st.mean[k];
        var.data[k] = m * var.data[k] + (1.0 - m) * st.var[k];
      }
      out.data = mean.data;
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

} // namespace mpc::ir
