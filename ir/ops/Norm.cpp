//===- ir/ops/Norm.cpp - layer_norm's and batch_norm's rules and kernels -===//
//
// The gradient rules of layer_norm and batch_norm, which build their backward
// ops, and the float64 reference kernels of all the Norm ops, which recompute
// the row or channel statistics from x. The schemas (operands, attributes,
// shape and batch rules) are in ops/Norm.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

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

std::vector<Node *> gradLayerNorm(Builder &b, const Node &n, Node *dy) {
  Node *x = n.inputs[0], *gamma = n.inputs[1];
  AttrMap eps = {{"eps", getFloat(n.attrs, "eps")}};
  Node *dx = b.create(OpKind::LayerNormGrad, {x, gamma, dy}, eps);
  Node *dgamma = b.create(OpKind::LayerNormGammaGrad, {x, dy}, eps);
  std::vector<int64_t> lead;
  for (int64_t i = 0; i + 1 < x->type.rank(); ++i) lead.push_back(i);
  Node *dbeta = lead.empty() ? dy : b.sum(dy, lead, /*keepdims=*/false);
  return {dx, dgamma, dbeta};
}

void refLayerNorm(RefOps o, const AttrMap &a, RefTensor &out) {
  const RefTensor &x = *o[0], &gamma = *o[1], &beta = *o[2];
  double eps = getFloat(a, "eps");
  forEachRow(x, [&](size_t base, int64_t d) {
    RowStats s = rowStats(&x.data[base], d, eps);
    for (int64_t j = 0; j < d; ++j) {
      double xhat = (x.data[base + size_t(j)] - s.mean) * s.rstd;
      out.data[base + size_t(j)] = xhat * gamma.data[size_t(j)] + beta.data[size_t(j)];
    }
  });
}

void refLayerNormGrad(RefOps o, const AttrMap &a, RefTensor &out) {
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
}

void refLayerNormGammaGrad(RefOps o, const AttrMap &a, RefTensor &out) {
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
}

// --- batch_norm ---------------------------------------------------------

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

std::vector<Node *> gradBatchNorm(Builder &b, const Node &n, Node *dy) {
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
}

void refBatchNorm(RefOps o, const AttrMap &a, RefTensor &out) {
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
}

void refBatchNormGrad(RefOps o, const AttrMap &a, RefTensor &out) {
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
}

void refBatchNormGammaGrad(RefOps o, const AttrMap &a, RefTensor &out) {
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
}

void refBatchNormUpdate(RefOps o, const AttrMap &a, RefTensor &out) {
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
}

} // namespace

void addNormRules(RuleTable &t) {
  t[size_t(OpKind::LayerNorm)] = {gradLayerNorm, refLayerNorm};
  t[size_t(OpKind::LayerNormGrad)] = {nullptr, refLayerNormGrad};
  t[size_t(OpKind::LayerNormGammaGrad)] = {nullptr, refLayerNormGammaGrad};
  t[size_t(OpKind::BatchNorm)] = {gradBatchNorm, refBatchNorm};
  t[size_t(OpKind::BatchNormGrad)] = {nullptr, refBatchNormGrad};
  t[size_t(OpKind::BatchNormGammaGrad)] = {nullptr, refBatchNormGammaGrad};
  t[size_t(OpKind::BatchNormUpdate)] = {nullptr, refBatchNormUpdate};
}

} // namespace mpc::ir
