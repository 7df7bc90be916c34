//===- ir/ops/Conv.cpp - conv2d and its backward ops ---------------------===//
//
// conv2d is torch.nn.functional.conv2d on NCHW f32 tensors: x [N,C,H,W],
// weights w [O, C/groups, KH, KW] (OIHW), an optional bias b [O], with
// stride, symmetric zero padding, dilation and groups. Its gradient uses two
// backward ops, conv2d_grad_input (dx, a transposed convolution of dy) and
// conv2d_grad_weight (dw, the correlation of x with dy); db is a plain sum of
// dy over N, OH, OW. Each backward op carries the forward attributes plus the
// one spatial size it cannot infer from its operands (input_size for dx,
// kernel_size for dw), so neither keeps a forward tensor alive only for its
// shape.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <tuple>

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// The geometry of one convolution, checked.
struct ConvGeom {
  int64_t n = 0, c = 0, h = 0, w = 0; ///< x
  int64_t o = 0, kh = 0, kw = 0;      ///< w (its input channels are c / groups)
  int64_t oh = 0, ow = 0;             ///< the result's spatial size
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  Shape xShape() const { return {n, c, h, w}; }
  Shape wShape() const { return {o, c / groups, kh, kw}; }
  Shape yShape() const { return {n, o, oh, ow}; }
};

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
void requireDy(const char *op, const TensorType &dy, const ConvGeom &g) {
  TensorType want{DType::F32, g.yShape()};
  if (dy != want)
    throw RuleError(std::string(op) + " operand 'dy' " + dy.str() +
                    " does not match the conv2d result " + want.str() + " of x " +
                    TensorType{DType::F32, g.xShape()}.str() + " and w " +
                    TensorType{DType::F32, g.wShape()}.str());
}

/// The geometry of the forward conv2d of conv2d_grad_input(dy, w).
ConvGeom gradInputGeom(TypeOps o, const AttrMap &a) {
  const char *op = "conv2d_grad_input";
  requireRank4(o[0], op, "dy", "N,O,OH,OW");
  requireRank4(o[1], op, "w", "O,C/groups,KH,KW");
  auto [h, w] = hwAttr(op, a, "input_size", 1, "positive");
  int64_t groups = groupsAttr(op, a);
  TensorType x{DType::F32, {o[0].shape[0], o[1].shape[1] * groups, h, w}};
  ConvGeom g = forwardGeom(op, x, o[1], a);
  requireDy(op, o[0], g);
  return g;
}

/// The geometry of the forward conv2d of conv2d_grad_weight(x, dy).
ConvGeom gradWeightGeom(TypeOps o, const AttrMap &a) {
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
  requireDy(op, o[1], g);
  return g;
}

/// Calls f(xIndex, wIndex, yIndex) for every product x * w that conv2d sums
/// into a result element: the taps that fall on the input (padding
/// contributes zeros), in the order n, o, oy, ox, c, ky, kx.
template <typename F> void forEachTap(const ConvGeom &g, F f) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o) {
      const int64_t c0 = (o / g.og()) * g.cg(); // the group's first input channel
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const size_t yi = size_t(((n * g.o + o) * g.oh + oy) * g.ow + ox);
          for (int64_t c = 0; c < g.cg(); ++c)
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                if (ix < 0 || ix >= g.w) continue;
                const size_t xi = size_t(((n * g.c + c0 + c) * g.h + iy) * g.w + ix);
                const size_t wi = size_t(((o * g.cg() + c) * g.kh + ky) * g.kw + kx);
                f(xi, wi, yi);
              }
            }
        }
    }
}

/// 2 multiply-adds per tap of every result element (padding included).
double convFlops(const ConvGeom &g) {
  return 2.0 * double(g.n) * double(g.o) * double(g.oh) * double(g.ow) * double(g.cg()) *
         double(g.kh) * double(g.kw);
}

std::vector<AttrSpec> convAttrs() {
  return {attr("stride", AttrType::Ints, std::vector<int64_t>{1, 1},
               "[sh, sw]: the step between windows, positive"),
          attr("padding", AttrType::Ints, std::vector<int64_t>{0, 0},
               "[ph, pw]: zeros added on both sides of H and W"),
          attr("dilation", AttrType::Ints, std::vector<int64_t>{1, 1},
               "[dh, dw]: the step between kernel taps, positive"),
          attr("groups", AttrType::Int, int64_t(1),
               "channel groups: C and O split into this many independent convolutions")};
}

/// The forward attributes of a conv2d node (for its backward ops).
AttrMap forwardAttrs(const AttrMap &a) {
  return {{"stride", a.at("stride")},
          {"padding", a.at("padding")},
          {"dilation", a.at("dilation")},
          {"groups", a.at("groups")}};
}

/// Throws unless operand `i` is unbatched (weights are shared by micro-batches).
void requireShared(const BatchQuery &q, size_t i, const char *name) {
  if (q.classes.size() > i && q.classes[i] == BatchClass::Batched)
    throw RuleError(std::string("operand '") + name + "' " + q.operands[i].str() +
                    " is batched, but conv2d shares its weights across the batch");
}

} // namespace

void addConvOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::Conv2d, "conv2d", "Conv",
                      "2-d convolution (cross-correlation, torch.nn.functional.conv2d) of "
                      "x [N,C,H,W] with w [O,C/groups,KH,KW], plus b [O] when given: "
                      "f32[N,O,OH,OW]",
                      {"x", "w", "b"});
    r.minArity = 2;
    r.attrs = convAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) {
      ConvGeom g = forwardGeom("conv2d", o[0], o[1], a);
      if (o.size() == 3) {
        requireDType(o[2], DType::F32, "conv2d", "b");
        if (o[2].shape != Shape{g.o})
          throw RuleError("conv2d operand 'b' must be f32[" + std::to_string(g.o) +
                          "] (the output channels of w " + o[1].str() + "), got " + o[2].str());
      }
      return TensorType{DType::F32, g.yShape()};
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      Node *x = n.inputs[0], *w = n.inputs[1];
      AttrMap ai = forwardAttrs(n.attrs), aw = ai;
      ai["input_size"] = std::vector<int64_t>{x->type.shape[2], x->type.shape[3]};
      aw["kernel_size"] = std::vector<int64_t>{w->type.shape[2], w->type.shape[3]};
      std::vector<Node *> g = {b.create(OpKind::Conv2dGradInput, {dy, w}, ai),
                               b.create(OpKind::Conv2dGradWeight, {x, dy}, aw)};
      if (n.inputs.size() == 3) g.push_back(b.sum(dy, {0, 2, 3}, /*keepdims=*/false));
      return g;
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      ConvGeom g = forwardGeom("conv2d", TensorType{DType::F32, o[0]->shape},
                               TensorType{DType::F32, o[1]->shape}, a);
      const std::vector<double> &x = o[0]->data, &w = o[1]->data;
      forEachTap(g, [&](size_t xi, size_t wi, size_t yi) { out.data[yi] += x[xi] * w[wi]; });
      if (o.size() == 3) {
        const int64_t plane = g.oh * g.ow;
        for (size_t i = 0; i < out.data.size(); ++i)
          out.data[i] += o[2]->data[size_t((int64_t(i) / plane) % g.o)];
      }
    };
    r.flops = [](TypeOps o, const TensorType &res, const AttrMap &a) {
      return convFlops(forwardGeom("conv2d", o[0], o[1], a)) + (o.size() == 3 ? elems(res) : 0.0);
    };
    r.batch = [](const BatchQuery &q) {
      requireShared(q, 1, "w");
      requireShared(q, 2, "b");
      return BatchResult{};
    };
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::Conv2dGradInput, "conv2d_grad_input", "Conv",
                      "dx of conv2d: the transposed convolution of dy [N,O,OH,OW] with "
                      "w [O,C/groups,KH,KW] onto f32[N,C,input_size] (not differentiable)",
                      {"dy", "w"});
    r.attrs = convAttrs();
    r.attrs.push_back(attr("input_size", AttrType::Ints, std::nullopt,
                           "[H, W]: the spatial size of the forward input x"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, gradInputGeom(o, a).xShape()};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      TensorType dyT{DType::F32, o[0]->shape}, wT{DType::F32, o[1]->shape};
      std::vector<TensorType> types = {dyT, wT};
      ConvGeom g = gradInputGeom(types, a);
      const std::vector<double> &dy = o[0]->data, &w = o[1]->data;
      forEachTap(g, [&](size_t xi, size_t wi, size_t yi) { out.data[xi] += dy[yi] * w[wi]; });
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return convFlops(gradInputGeom(o, a));
    };
    r.batch = [](const BatchQuery &q) {
      requireShared(q, 1, "w");
      return BatchResult{};
    };
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::Conv2dGradWeight, "conv2d_grad_weight", "Conv",
                      "dw of conv2d: the correlation of x [N,C,H,W] with dy [N,O,OH,OW] summed "
                      "over N, f32[O,C/groups,kernel_size] (not differentiable)",
                      {"x", "dy"});
    r.attrs = convAttrs();
    r.attrs.push_back(attr("kernel_size", AttrType::Ints, std::nullopt,
                           "[KH, KW]: the spatial size of the forward weights w"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, gradWeightGeom(o, a).wShape()};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      std::vector<TensorType> types = {TensorType{DType::F32, o[0]->shape},
                                       TensorType{DType::F32, o[1]->shape}};
      ConvGeom g = gradWeightGeom(types, a);
      const std::vector<double> &x = o[0]->data, &dy = o[1]->data;
      forEachTap(g, [&](size_t xi, size_t wi, size_t yi) { out.data[wi] += x[xi] * dy[yi]; });
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return convFlops(gradWeightGeom(o, a));
    };
    // A sum over the images, so over the batch: the full-batch dw is the sum
    // of the micro-batch ones.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      for (size_t i = 0; i < 2; ++i)
        if (q.classes[i] != BatchClass::Batched)
          throw RuleError(std::string("operand '") + (i == 0 ? "x" : "dy") + "' " +
                          q.operands[i].str() + " is not batched, but the other one is");
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
