//===- runtime/Windows.cpp - sliding-window geometry of conv2d and pooling ===//
#include "runtime/Windows.h"

#include "plan/Attrs.h"
#include "plan/PlanIO.h"
#include "support/Error.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace mpc::runtime {

namespace {

/// Attribute values beyond this are mistakes (the shape rules refuse them).
constexpr int64_t kMaxWindowAttr = int64_t(1) << 20;

std::pair<int64_t, int64_t> hw(const std::vector<int64_t> &v, const char *name, int64_t lo) {
  if (v.size() != 2 || v[0] < lo || v[1] < lo || v[0] > kMaxWindowAttr || v[1] > kMaxWindowAttr)
    throw RuleError(std::string("attribute '") + name + "' " + plan::shapeText(v) +
                    " must be 2 values >= " + std::to_string(lo));
  return {v[0], v[1]};
}

void requireRank4(const std::vector<int64_t> &s, const char *what) {
  if (s.size() != 4)
    throw RuleError(std::string(what) + " must have rank 4, got " + plan::shapeText(s));
}

} // namespace

ConvDims convDims(const plan::AttrMap &a, const std::vector<int64_t> &x,
                  const std::vector<int64_t> &w, const std::vector<int64_t> &y) {
  requireRank4(x, "x");
  requireRank4(w, "w");
  requireRank4(y, "the convolution's result");
  ConvDims d;
  std::tie(d.sh, d.sw) = hw(plan::attrInts(a, "stride"), "stride", 1);
  std::tie(d.ph, d.pw) = hw(plan::attrInts(a, "padding"), "padding", 0);
  std::tie(d.dh, d.dw) = hw(plan::attrInts(a, "dilation"), "dilation", 1);
  d.groups = plan::attrInt(a, "groups");
  d.n = x[0], d.c = x[1], d.h = x[2], d.w = x[3];
  d.o = w[0], d.kh = w[2], d.kw = w[3];
  const std::string shapes =
      ": x " + plan::shapeText(x) + ", w " + plan::shapeText(w) + ", result " + plan::shapeText(y);
  if (d.groups < 1 || d.groups > kMaxWindowAttr || d.c % d.groups || d.o % d.groups ||
      w[1] != d.c / d.groups || d.kh < 1 || d.kw < 1)
    throw RuleError("conv2d channels or groups (" + std::to_string(d.groups) + ") do not agree" +
                    shapes);
  const int64_t spanH = d.dh * (d.kh - 1) + 1, spanW = d.dw * (d.kw - 1) + 1;
  const int64_t inH = d.h + 2 * d.ph, inW = d.w + 2 * d.pw;
  if (spanH > inH || spanW > inW)
    throw RuleError("conv2d kernel is larger than the padded input" + shapes);
  d.oh = (inH - spanH) / d.sh + 1;
  d.ow = (inW - spanW) / d.sw + 1;
  if (y != std::vector<int64_t>{d.n, d.o, d.oh, d.ow})
    throw RuleError("conv2d result must be " + plan::shapeText({d.n, d.o, d.oh, d.ow}) + shapes);
  return d;
}

PoolDims poolDims(const plan::AttrMap &a, const std::vector<int64_t> &x,
                  const std::vector<int64_t> &y) {
  requireRank4(x, "x");
  requireRank4(y, "the pooled result");
  PoolDims d;
  d.n = x[0], d.c = x[1], d.h = x[2], d.w = x[3];
  std::tie(d.kh, d.kw) = hw(plan::attrInts(a, "kernel"), "kernel", 1);
  std::vector<int64_t> stride = plan::attrInts(a, "stride");
  if (stride.empty())
    std::tie(d.sh, d.sw) = std::pair{d.kh, d.kw};
  else
    std::tie(d.sh, d.sw) = hw(stride, "stride", 1);
  std::tie(d.ph, d.pw) = hw(plan::attrInts(a, "padding"), "padding", 0);
  // Declared by avg_pool2d and its gradient only; max pooling has no divisor.
  d.countPad = plan::hasAttr(a, "count_include_pad") && plan::attrBool(a, "count_include_pad");
  const bool ceil = plan::attrBool(a, "ceil_mode");
  const std::string shapes = ": x " + plan::shapeText(x) + ", result " + plan::shapeText(y);
  if (2 * d.ph > d.kh || 2 * d.pw > d.kw || d.kh > d.h + 2 * d.ph || d.kw > d.w + 2 * d.pw)
    throw RuleError("pooling kernel and padding do not fit the input" + shapes);
  // PyTorch's pooling_output_shape (see ir/ops/Pool.cpp).
  auto pooled = [&](int64_t in, int64_t k, int64_t s, int64_t p) {
    const int64_t span = in + 2 * p - k;
    int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (out - 1) * s >= in + p) --out;
    return out;
  };
  d.oh = pooled(d.h, d.kh, d.sh, d.ph);
  d.ow = pooled(d.w, d.kw, d.sw, d.pw);
  if (y != std::vector<int64_t>{d.n, d.c, d.oh, d.ow})
    throw RuleError("pooled result must be " + plan::shapeText({d.n, d.c, d.oh, d.ow}) + shapes);
  return d;
}

PoolWindow poolWindow(const PoolDims &d, int64_t oy, int64_t ox) {
  int64_t y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
  int64_t y1 = std::min(y0 + d.kh, d.h + d.ph), x1 = std::min(x0 + d.kw, d.w + d.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, d.h), x1 = std::min(x1, d.w);
  return {y0, y1, x0, x1, d.countPad ? padded : (y1 - y0) * (x1 - x0)};
}

} // namespace mpc::runtime
