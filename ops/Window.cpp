//===- ops/Window.cpp - sliding-window geometry of conv2d and pooling ----===//
#include "ops/Window.h"

#include "ops/SchemaHelpers.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace mpc::ops {

using namespace helpers;

std::pair<int64_t, int64_t> heightWidth(const char *op, const std::vector<int64_t> &v,
                                        const char *name, int64_t lo, const char *what) {
  if (v.size() != 2)
    throw RuleError(std::string(op) + " " + name + " must have 2 values (height, width), got " +
                    shapeText(v));
  for (int64_t e : v) {
    if (e < lo)
      throw RuleError(std::string(op) + " " + name + " " + shapeText(v) + " must be " + what);
    if (e > kMaxWindowAttr)
      throw RuleError(std::string(op) + " " + name + " " + shapeText(v) + " exceeds " +
                      std::to_string(kMaxWindowAttr));
  }
  return {v[0], v[1]};
}

namespace {

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// A two-value attribute (height, width) of the map, checked by heightWidth.
std::pair<int64_t, int64_t> hwAttr(const char *op, const AttrMap &a, const char *name, int64_t lo,
                                   const char *what) {
  return heightWidth(op, getInts(a, name), name, lo, what);
}

/// The `groups` attribute, in [1, kMaxWindowAttr].
int64_t groupsAttr(const char *op, const AttrMap &a) {
  int64_t groups = getInt(a, "groups");
  if (groups < 1 || groups > kMaxWindowAttr)
    throw RuleError(std::string(op) + " groups must be in [1, " + std::to_string(kMaxWindowAttr) +
                    "], got " + std::to_string(groups));
  return groups;
}

/// Reads stride, padding, dilation and groups into `g`.
void readConvAttrs(const char *op, const AttrMap &a, ConvGeom &g) {
  std::tie(g.sh, g.sw) = hwAttr(op, a, "stride", 1, "positive");
  std::tie(g.ph, g.pw) = hwAttr(op, a, "padding", 0, "non-negative");
  std::tie(g.dh, g.dw) = hwAttr(op, a, "dilation", 1, "positive");
  g.groups = groupsAttr(op, a);
}

void requireRank4(const TensorType &t, const char *op, const char *operand, const char *layout) {
  requireDType(t, DType::F32, op, operand);
  if (t.rank() != 4)
    throw RuleError(std::string(op) + " operand '" + operand + "' must be f32 of rank 4 (" +
                    layout + "), got " + t.str());
}

/// The geometry of conv2d(x, w) under `attrs`, or RuleError naming both
/// shapes (`op` names the op in messages).
ConvGeom forwardGeom(const char *op, const TensorType &x, const TensorType &w,
                     const AttrMap &attrs) {
  requireRank4(x, op, "x", "N,C,H,W");
  requireRank4(w, op, "w", "O,C/groups,KH,KW");
  ConvGeom g;
  readConvAttrs(op, attrs, g);
  g.n = x.shape[0], g.c = x.shape[1], g.h = x.shape[2], g.w = x.shape[3];
  g.o = w.shape[0], g.kh = w.shape[2], g.kw = w.shape[3];
  const std::string both = ": x " + x.str() + ", w " + w.str();
  const std::string grp = " (groups = " + std::to_string(g.groups) + ")";
  if (g.c % g.groups != 0)
    throw RuleError(std::string(op) + " input channels C = " + std::to_string(g.c) +
                    " are not divisible by groups = " + std::to_string(g.groups) + both);
  if (g.o % g.groups != 0)
    throw RuleError(std::string(op) + " output channels O = " + std::to_string(g.o) +
                    " are not divisible by groups = " + std::to_string(g.groups) + both);
  if (w.shape[1] != g.c / g.groups)
    throw RuleError(std::string(op) + " channel mismatch: x has C = " + std::to_string(g.c) +
                    " channels, so w needs C/groups = " + std::to_string(g.c / g.groups) +
                    " on axis 1" + grp + both);
  if (g.kh < 1 || g.kw < 1) throw RuleError(std::string(op) + " kernel is empty" + both);
  // The dilated kernel must fit in the padded input.
  const int64_t spanH = g.dh * (g.kh - 1) + 1, spanW = g.dw * (g.kw - 1) + 1;
  const int64_t inH = g.h + 2 * g.ph, inW = g.w + 2 * g.pw;
  if (spanH > inH || spanW > inW)
    throw RuleError(std::string(op) + " kernel " + std::to_string(spanH) + "x" +
                    std::to_string(spanW) + " (dilated) is larger than the padded input " +
                    std::to_string(inH) + "x" + std::to_string(inW) + both);
  g.oh = (inH - spanH) / g.sh + 1;
  g.ow = (inW - spanW) / g.sw + 1;
  requireValidShape(g.yShape(), op);
  return g;
}

/// Checks that dy is f32 of the forward result's shape.
void requireConvDy(const char *op, const TensorType &dy, const ConvGeom &g) {
  TensorType want{DType::F32, g.yShape()};
  if (dy != want)
    throw RuleError(std::string(op) + " operand 'dy' " + dy.str() +
                    " does not match the conv2d result " + want.str() + " of x " +
                    TensorType{DType::F32, g.xShape()}.str() + " and w " +
                    TensorType{DType::F32, g.wShape()}.str());
}

/// The geometry of the forward conv2d of conv2d_grad_input(dy, w).
ConvGeom gradInputGeom(const std::vector<TensorType> &o, const AttrMap &a) {
  const char *op = "conv2d_grad_input";
  requireRank4(o[0], op, "dy", "N,O,OH,OW");
  requireRank4(o[1], op, "w", "O,C/groups,KH,KW");
  auto [h, w] = hwAttr(op, a, "input_size", 1, "positive");
  int64_t groups = groupsAttr(op, a);
  TensorType x{DType::F32, {o[0].shape[0], o[1].shape[1] * groups, h, w}};
  ConvGeom g = forwardGeom(op, x, o[1], a);
  requireConvDy(op, o[0], g);
  return g;
}

/// The geometry of the forward conv2d of conv2d_grad_weight(x, dy).
ConvGeom gradWeightGeom(const std::vector<TensorType> &o, const AttrMap &a) {
  const char *op = "conv2d_grad_weight";
  requireRank4(o[0], op, "x", "N,C,H,W");
  requireRank4(o[1], op, "dy", "N,O,OH,OW");
  auto [kh, kw] = hwAttr(op, a, "kernel_size", 1, "positive");
  int64_t groups = groupsAttr(op, a);
  if (o[0].shape[1] % groups != 0)
    throw RuleError(std::string(op) + " input channels C = " + std::to_string(o[0].shape[1]) +
                    " are not divisible by groups = " + std::to_string(groups) + ": x " +
                    o[0].str() + ", dy " + o[1].str());
  TensorType w{DType::F32, {o[1].shape[1], o[0].shape[1] / groups, kh, kw}};
  ConvGeom g = forwardGeom(op, o[0], w, a);
  requireConvDy(op, o[1], g);
  return g;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// PyTorch's pooling_output_shape (dilation 1): floor or ceil of
/// (in + 2p - k) / s, plus one; with ceil_mode a last window that would
/// start at or past in + p (entirely in the right padding) is dropped.
int64_t pooledSize(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil) {
  const int64_t span = in + 2 * p - k;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}

/// The geometry of pooling x [N,C,H,W] under `attrs` (kernel, stride,
/// padding, ceil_mode, count_include_pad).
PoolGeom forwardPool(const char *op, const TensorType &x, const AttrMap &a) {
  requireDType(x, DType::F32, op, "x");
  if (x.rank() != 4)
    throw RuleError(std::string(op) + " operand 'x' must be f32 of rank 4 (N,C,H,W), got " +
                    x.str());
  PoolGeom g;
  g.n = x.shape[0], g.c = x.shape[1], g.h = x.shape[2], g.w = x.shape[3];
  const std::vector<int64_t> &kernel = getInts(a, "kernel");
  std::tie(g.kh, g.kw) = heightWidth(op, kernel, "kernel", 1, "positive");
  const std::vector<int64_t> &stride = getInts(a, "stride");
  if (stride.empty())
    std::tie(g.sh, g.sw) = std::pair{g.kh, g.kw};
  else
    std::tie(g.sh, g.sw) = heightWidth(op, stride, "stride", 1, "positive ([] = kernel)");
  const std::vector<int64_t> &padding = getInts(a, "padding");
  std::tie(g.ph, g.pw) = heightWidth(op, padding, "padding", 0, "non-negative");
  // As PyTorch: a wider padding would allow windows that see padding only.
  if (2 * g.ph > g.kh || 2 * g.pw > g.kw)
    throw RuleError(std::string(op) + " padding " + shapeText(padding) +
                    " must be at most half the kernel " + shapeText(kernel));
  if (g.kh > g.h + 2 * g.ph || g.kw > g.w + 2 * g.pw)
    throw RuleError(std::string(op) + " kernel " + shapeText(kernel) +
                    " is larger than the padded input " + std::to_string(g.h + 2 * g.ph) + "x" +
                    std::to_string(g.w + 2 * g.pw) + " of x " + x.str());
  const bool ceil = getBool(a, "ceil_mode");
  g.oh = pooledSize(g.h, g.kh, g.sh, g.ph, ceil);
  g.ow = pooledSize(g.w, g.kw, g.sw, g.pw, ceil);
  // Declared by avg_pool2d and its gradient only; max pooling has no divisor.
  g.countPad = a.count("count_include_pad") && getBool(a, "count_include_pad");
  return g;
}

/// Checks that dy is f32 of the forward result's shape.
void requirePoolDy(const char *op, const TensorType &dy, const PoolGeom &g) {
  TensorType want{DType::F32, g.yShape()};
  if (dy != want)
    throw RuleError(std::string(op) + " operand 'dy' " + dy.str() +
                    " does not match the pooled result " + want.str() + " of x " +
                    TensorType{DType::F32, g.xShape()}.str());
}

/// The geometry of the avg_pool2d of avg_pool2d_grad(dy): x is
/// [N, C, input_size].
PoolGeom avgGradGeom(const TensorType &dy, const AttrMap &a) {
  const char *op = "avg_pool2d_grad";
  requireDType(dy, DType::F32, op, "dy");
  if (dy.rank() != 4)
    throw RuleError(std::string(op) + " operand 'dy' must be f32 of rank 4 (N,C,OH,OW), got " +
                    dy.str());
  auto [h, w] = heightWidth(op, getInts(a, "input_size"), "input_size", 1, "positive");
  PoolGeom g = forwardPool(op, TensorType{DType::F32, {dy.shape[0], dy.shape[1], h, w}}, a);
  requirePoolDy(op, dy, g);
  return g;
}

} // namespace

ConvGeom convGeom(OpKind kind, const std::vector<TensorType> &o, const AttrMap &a) {
  switch (kind) {
  case OpKind::Conv2d: return forwardGeom("conv2d", o[0], o[1], a);
  case OpKind::Conv2dGradInput: return gradInputGeom(o, a);
  case OpKind::Conv2dGradWeight: return gradWeightGeom(o, a);
  default: break;
  }
  MPC_ASSERT(false, "convGeom of an op that is not a convolution");
  return {};
}

PoolGeom poolGeom(OpKind kind, const std::vector<TensorType> &o, const AttrMap &a) {
  switch (kind) {
  case OpKind::MaxPool2d: return forwardPool("max_pool2d", o[0], a);
  case OpKind::AvgPool2d: return forwardPool("avg_pool2d", o[0], a);
  case OpKind::MaxPool2dGrad: {
    PoolGeom g = forwardPool("max_pool2d_grad", o[0], a);
    requirePoolDy("max_pool2d_grad", o[1], g);
    return g;
  }
  case OpKind::AvgPool2dGrad: return avgGradGeom(o[0], a);
  default: break;
  }
  MPC_ASSERT(false, "poolGeom of an op that is not a pool");
  return {};
}

PoolWindow poolWindow(const PoolGeom &g, int64_t oy, int64_t ox) {
  int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  // The window as far as the padded input reaches (ceil_mode's last window
  // may reach past it), which is what count_include_pad counts.
  int64_t y1 = std::min(y0 + g.kh, g.h + g.ph), x1 = std::min(x0 + g.kw, g.w + g.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, g.h), x1 = std::min(x1, g.w);
  return {y0, y1, x0, x1, g.countPad ? padded : (y1 - y0) * (x1 - x0)};
}

} // namespace mpc::ops
