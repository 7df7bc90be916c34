//===- ir/ops/Pool.cpp - max, average and global average pooling ---------===//
//
// 2-d pooling over NCHW f32 tensors as torch.nn.functional.max_pool2d and
// avg_pool2d: a kernel window moved by stride over the input with symmetric
// padding (which max pooling never picks and average pooling counts as zeros
// or leaves out, as count_include_pad says). The output size is PyTorch's,
// with ceil_mode the windows that would start beyond the input and its left
// padding dropped (MXNet's pooling_convention "full" is ceil_mode).
// max_pool2d's gradient routes dy to the first maximum of each window in
// row-major order (PyTorch's tie rule), recomputed by max_pool2d_grad from x;
// avg_pool2d's spreads dy / divisor over each window (avg_pool2d_grad, which
// needs only dy and the input size). global_avg_pool2d is the mean over H
// and W; its gradient is a broadcast of dy, scaled.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <algorithm>
#include <tuple>

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// The geometry of one pooling, checked.
struct PoolGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;
  Shape xShape() const { return {n, c, h, w}; }
  Shape yShape() const { return {n, c, oh, ow}; }
};


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
/// padding, ceil_mode).
PoolGeom poolGeom(const char *op, const TensorType &x, const AttrMap &a) {
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
  return g;
}

/// Checks that dy is f32 of the forward result's shape.
void requireDy(const char *op, const TensorType &dy, const PoolGeom &g) {
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
  PoolGeom g = poolGeom(op, TensorType{DType::F32, {dy.shape[0], dy.shape[1], h, w}}, a);
  requireDy(op, dy, g);
  return g;
}

/// One window of the output position (oy, ox): the rows [y0, y1) and columns
/// [x0, x1) of the input it covers, and PyTorch's divisor of average pooling.
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t divisor;
};
Window windowAt(const PoolGeom &g, int64_t oy, int64_t ox, bool countPad) {
  int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  // The window as far as the padded input reaches (ceil_mode's last window
  // may reach past it), which is what count_include_pad counts.
  int64_t y1 = std::min(y0 + g.kh, g.h + g.ph), x1 = std::min(x0 + g.kw, g.w + g.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, g.h), x1 = std::min(x1, g.w);
  return {y0, y1, x0, x1, countPad ? padded : (y1 - y0) * (x1 - x0)};
}

/// Calls f(planeOffsetOfX, planeOffsetOfY, oy, ox) for every output position
/// of every (n, c) plane, in row-major order.
template <typename F> void forEachOutput(const PoolGeom &g, F f) {
  for (int64_t p = 0; p < g.n * g.c; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        f(size_t(p * g.h * g.w), size_t((p * g.oh + oy) * g.ow + ox), oy, ox);
}

/// The flat index (within its plane) of the first maximum of the window,
/// scanning rows then columns; every window holds at least one input element.
size_t argmaxOf(const PoolGeom &g, const double *plane, const Window &win) {
  size_t best = size_t(win.y0 * g.w + win.x0);
  for (int64_t y = win.y0; y < win.y1; ++y)
    for (int64_t x = win.x0; x < win.x1; ++x)
      if (plane[y * g.w + x] > plane[best]) best = size_t(y * g.w + x);
  return best;
}

std::vector<AttrSpec> poolAttrs(bool avg) {
  std::vector<AttrSpec> a = {
      attr("kernel", AttrType::Ints, std::nullopt, "[kh, kw]: the window, positive"),
      attr("stride", AttrType::Ints, std::vector<int64_t>{},
           "[sh, sw]: the step between windows, positive; [] is the kernel"),
      attr("padding", AttrType::Ints, std::vector<int64_t>{0, 0},
           "[ph, pw]: added on both sides of H and W, at most half the kernel"),
      attr("ceil_mode", AttrType::Bool, false,
           "round the output size up (a partial last window; MXNet's "
           "pooling_convention \"full\")")};
  if (avg)
    a.push_back(attr("count_include_pad", AttrType::Bool, true,
                     "divide by the window size including padding (else by the input "
                     "elements it covers)"));
  return a;
}

/// The pooling attributes of a forward node (for its backward op).
AttrMap poolAttrsOf(const AttrMap &a) {
  AttrMap out;
  for (const char *name : {"kernel", "stride", "padding", "ceil_mode", "count_include_pad"})
    if (a.count(name)) out[name] = a.at(name);
  return out;
}

double windowFlops(TypeOps, const TensorType &result, const AttrMap &a) {
  const std::vector<int64_t> &k = getInts(a, "kernel");
  return elems(result) * double(k.size() == 2 ? k[0] * k[1] : 1);
}

} // namespace

void addPoolOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::MaxPool2d, "max_pool2d", "Pool",
                      "the maximum of each kernel window of x [N,C,H,W] "
                      "(torch.nn.functional.max_pool2d; padding never wins)",
                      {"x"});
    r.attrs = poolAttrs(false);
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, poolGeom("max_pool2d", o[0], a).yShape()};
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      return {b.create(OpKind::MaxPool2dGrad, {n.inputs[0], dy}, poolAttrsOf(n.attrs))};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      PoolGeom g = poolGeom("max_pool2d", TensorType{DType::F32, o[0]->shape}, a);
      forEachOutput(g, [&](size_t xp, size_t yi, int64_t oy, int64_t ox) {
        const double *plane = o[0]->data.data() + xp;
        out.data[yi] = plane[argmaxOf(g, plane, windowAt(g, oy, ox, false))];
      });
    };
    r.flops = windowFlops;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::MaxPool2dGrad, "max_pool2d_grad", "Pool",
                      "dx of max_pool2d: zeros with each dy added at the first maximum of its "
                      "window of x (not differentiable)",
                      {"x", "dy"});
    r.attrs = poolAttrs(false);
    r.infer = [](TypeOps o, const AttrMap &a) {
      PoolGeom g = poolGeom("max_pool2d_grad", o[0], a);
      requireDy("max_pool2d_grad", o[1], g);
      return o[0];
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      PoolGeom g = poolGeom("max_pool2d_grad", TensorType{DType::F32, o[0]->shape}, a);
      forEachOutput(g, [&](size_t xp, size_t yi, int64_t oy, int64_t ox) {
        const double *plane = o[0]->data.data() + xp;
        out.data[xp + argmaxOf(g, plane, windowAt(g, oy, ox, false))] += o[1]->data[yi];
      });
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return windowFlops(o, o[1], a);
    };
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::AvgPool2d, "avg_pool2d", "Pool",
                      "the mean of each kernel window of x [N,C,H,W] "
                      "(torch.nn.functional.avg_pool2d)",
                      {"x"});
    r.attrs = poolAttrs(true);
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, poolGeom("avg_pool2d", o[0], a).yShape()};
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      AttrMap a = poolAttrsOf(n.attrs);
      const Shape &x = n.inputs[0]->type.shape;
      a["input_size"] = std::vector<int64_t>{x[2], x[3]};
      return {b.create(OpKind::AvgPool2dGrad, {dy}, a)};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      PoolGeom g = poolGeom("avg_pool2d", TensorType{DType::F32, o[0]->shape}, a);
      const bool countPad = getBool(a, "count_include_pad");
      forEachOutput(g, [&](size_t xp, size_t yi, int64_t oy, int64_t ox) {
        const double *plane = o[0]->data.data() + xp;
        Window win = windowAt(g, oy, ox, countPad);
        double s = 0;
        for (int64_t y = win.y0; y < win.y1; ++y)
          for (int64_t x = win.x0; x < win.x1; ++x) s += plane[y * g.w + x];
        out.data[yi] = s / double(win.divisor);
      });
    };
    r.flops = windowFlops;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::AvgPool2dGrad, "avg_pool2d_grad", "Pool",
                      "dx of avg_pool2d: zeros f32[N,C,input_size] with each dy / divisor "
                      "added over its window (not differentiable)",
                      {"dy"});
    r.attrs = poolAttrs(true);
    r.attrs.push_back(attr("input_size", AttrType::Ints, std::nullopt,
                           "[H, W]: the spatial size of the forward input x"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, avgGradGeom(o[0], a).xShape()};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      PoolGeom g = avgGradGeom(TensorType{DType::F32, o[0]->shape}, a);
      const bool countPad = getBool(a, "count_include_pad");
      forEachOutput(g, [&](size_t xp, size_t yi, int64_t oy, int64_t ox) {
        Window win = windowAt(g, oy, ox, countPad);
        const double share = o[0]->data[yi] / double(win.divisor);
        for (int64_t y = win.y0; y < win.y1; ++y)
          for (int64_t x = win.x0; x < win.x1; ++x) out.data[xp + size_t(y * g.w + x)] += share;
      });
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return windowFlops(o, o[0], a);
    };
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::GlobalAvgPool2d, "global_avg_pool2d", "Pool",
                      "the mean over H and W of x [N,C,H,W]: f32[N,C,1,1] "
                      "(torch.nn.functional.adaptive_avg_pool2d(x, 1))",
                      {"x"});
    r.infer = [](TypeOps o, const AttrMap &) {
      const TensorType &x = o[0];
      requireDType(x, DType::F32, "global_avg_pool2d", "x");
      if (x.rank() != 4 || x.shape[2] < 1 || x.shape[3] < 1)
        throw RuleError("global_avg_pool2d operand 'x' must be f32 of rank 4 (N,C,H,W) with "
                        "H, W >= 1, got " +
                        x.str());
      return TensorType{DType::F32, {x.shape[0], x.shape[1], 1, 1}};
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      const Shape &x = n.inputs[0]->type.shape;
      return {b.scale(b.broadcastTo(dy, x), 1.0 / double(x[2] * x[3]))};
    };
    r.reference = [](RefOps o, const AttrMap &, RefTensor &out) {
      const Shape &x = o[0]->shape;
      const int64_t plane = x[2] * x[3];
      for (size_t p = 0; p < out.data.size(); ++p) {
        double s = 0;
        for (int64_t i = 0; i < plane; ++i) s += o[0]->data[p * size_t(plane) + size_t(i)];
        out.data[p] = s / double(plane);
      }
    };
    r.flops = flopsPerInput<1>;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
