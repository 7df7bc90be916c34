//===- ir/ops/Conv.cpp - conv2d's gradient rule and reference kernels ----===//
//
// conv2d's gradient uses its two backward ops, each given the forward
// attributes plus the one spatial size it cannot infer from its operands.
// The reference kernels visit every tap of the geometry (ops/Window.h). The
// schemas are in ops/Conv.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Window.h"

namespace mpc::ir {

using namespace ophelpers;
using ops::ConvGeom;

namespace {

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

/// The geometry of an op of `kind` over the reference operands.
ConvGeom geomOf(OpKind kind, RefOps o, const AttrMap &a) {
  std::vector<TensorType> types;
  for (const RefTensor *t : o) types.push_back(TensorType{DType::F32, t->shape});
  return ops::convGeom(kind, types, a);
}

/// The forward attributes of a conv2d node (for its backward ops).
AttrMap forwardAttrs(const AttrMap &a) {
  return {{"stride", a.at("stride")},
          {"padding", a.at("padding")},
          {"dilation", a.at("dilation")},
          {"groups", a.at("groups")}};
}

std::vector<Node *> gradConv2d(Builder &b, const Node &n, Node *dy) {
  Node *x = n.inputs[0], *w = n.inputs[1];
  AttrMap ai = forwardAttrs(n.attrs), aw = ai;
  ai["input_size"] = std::vector<int64_t>{x->type.shape[2], x->type.shape[3]};
  aw["kernel_size"] = std::vector<int64_t>{w->type.shape[2], w->type.shape[3]};
  std::vector<Node *> g = {b.create(OpKind::Conv2dGradInput, {dy, w}, ai),
                           b.create(OpKind::Conv2dGradWeight, {x, dy}, aw)};
  if (n.inputs.size() == 3) g.push_back(b.sum(dy, {0, 2, 3}, /*keepdims=*/false));
  return g;
}

void refConv2d(RefOps o, const AttrMap &a, RefTensor &out) {
  ConvGeom g = geomOf(OpKind::Conv2d, o.first(2), a);
  const std::vector<double> &x = o[0]->data, &w = o[1]->data;
  forEachTap(g, [&](size_t xi, size_t wi, size_t yi) { out.data[yi] += x[xi] * w[wi]; });
  if (o.size() == 3) {
    const int64_t plane = g.oh * g.ow;
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] += o[2]->data[size_t((int64_t(i) / plane) % g.o)];
  }
}

void refConv2dGradInput(RefOps o, const AttrMap &a, RefTensor &out) {
  ConvGeom g = geomOf(OpKind::Conv2dGradInput, o, a);
  const std::vector<double> &dy = o[0]->data, &w = o[1]->data;
  forEachTap(g, [&](size_t xi, size_t wi, size_t yi) { out.data[xi] += dy[yi] * w[wi]; });
}

void refConv2dGradWeight(RefOps o, const AttrMap &a, RefTensor &out) {
  ConvGeom g = geomOf(OpKind::Conv2dGradWeight, o, a);
  const std::vector<double> &x = o[0]->data, &dy = o[1]->data;
  forEachTap(g, [&](size_t xi, size_t wi, size_t yi) { out.data[wi] += x[xi] * dy[yi]; });
}

} // namespace

void addConvRules(RuleTable &t) {
  t[size_t(OpKind::Conv2d)] = {gradConv2d, refConv2d};
  t[size_t(OpKind::Conv2dGradInput)] = {nullptr, refConv2dGradInput};
  t[size_t(OpKind::Conv2dGradWeight)] = {nullptr, refConv2dGradWeight};
}

} // namespace mpc::ir
