//===- ir/ops/Pool.cpp - the pools' gradient rules and reference kernels -===//
//
// The reference kernels visit each window of the geometry (ops/Window.h) in
// output order; max pooling keeps the first maximum of a window, scanning
// rows then columns (PyTorch's tie rule). The schemas are in ops/Pool.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Window.h"

namespace mpc::ir {

using namespace ophelpers;
using ops::PoolGeom;
using ops::PoolWindow;

namespace {

/// The geometry of an op of `kind` over the reference operands.
PoolGeom geomOf(OpKind kind, RefOps o, const AttrMap &a) {
  std::vector<TensorType> types;
  for (const RefTensor *t : o) types.push_back(TensorType{DType::F32, t->shape});
  return ops::poolGeom(kind, types, a);
}

/// Calls f(planeOffsetOfX, planeOffsetOfY, window) for every output position
/// of every (n, c) plane, in row-major order.
template <typename F> void forEachOutput(const PoolGeom &g, F f) {
  for (int64_t p = 0; p < g.n * g.c; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        f(size_t(p * g.h * g.w), size_t((p * g.oh + oy) * g.ow + ox), ops::poolWindow(g, oy, ox));
}

/// The flat index (within its plane) of the first maximum of the window,
/// scanning rows then columns; every window holds at least one input element.
size_t argmaxOf(const PoolGeom &g, const double *plane, const PoolWindow &win) {
  size_t best = size_t(win.y0 * g.w + win.x0);
  for (int64_t y = win.y0; y < win.y1; ++y)
    for (int64_t x = win.x0; x < win.x1; ++x)
      if (plane[y * g.w + x] > plane[best]) best = size_t(y * g.w + x);
  return best;
}

/// The pooling attributes of a forward node (for its backward op).
AttrMap poolAttrsOf(const AttrMap &a) {
  AttrMap out;
  for (const char *name : {"kernel", "stride", "padding", "ceil_mode", "count_include_pad"})
    if (a.count(name)) out[name] = a.at(name);
  return out;
}

std::vector<Node *> gradMaxPool2d(Builder &b, const Node &n, Node *dy) {
  return {b.create(OpKind::MaxPool2dGrad, {n.inputs[0], dy}, poolAttrsOf(n.attrs))};
}

void refMaxPool2d(RefOps o, const AttrMap &a, RefTensor &out) {
  PoolGeom g = geomOf(OpKind::MaxPool2d, o, a);
  forEachOutput(g, [&](size_t xp, size_t yi, const PoolWindow &win) {
    const double *plane = o[0]->data.data() + xp;
    out.data[yi] = plane[argmaxOf(g, plane, win)];
  });
}

void refMaxPool2dGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  PoolGeom g = geomOf(OpKind::MaxPool2dGrad, o, a);
  forEachOutput(g, [&](size_t xp, size_t yi, const PoolWindow &win) {
    const double *plane = o[0]->data.data() + xp;
    out.data[xp + argmaxOf(g, plane, win)] += o[1]->data[yi];
  });
}

std::vector<Node *> gradAvgPool2d(Builder &b, const Node &n, Node *dy) {
  AttrMap a = poolAttrsOf(n.attrs);
  const Shape &x = n.inputs[0]->type.shape;
  a["input_size"] = std::vector<int64_t>{x[2], x[3]};
  return {b.create(OpKind::AvgPool2dGrad, {dy}, a)};
}

void refAvgPool2d(RefOps o, const AttrMap &a, RefTensor &out) {
  PoolGeom g = geomOf(OpKind::AvgPool2d, o, a);
  forEachOutput(g, [&](size_t xp, size_t yi, const PoolWindow &win) {
    const double *plane = o[0]->data.data() + xp;
    double s = 0;
    for (int64_t y = win.y0; y < win.y1; ++y)
      for (int64_t x = win.x0; x < win.x1; ++x) s += plane[y * g.w + x];
    out.data[yi] = s / double(win.divisor);
  });
}

void refAvgPool2dGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  PoolGeom g = geomOf(OpKind::AvgPool2dGrad, o, a);
  forEachOutput(g, [&](size_t xp, size_t yi, const PoolWindow &win) {
    const double share = o[0]->data[yi] / double(win.divisor);
    for (int64_t y = win.y0; y < win.y1; ++y)
      for (int64_t x = win.x0; x < win.x1; ++x) out.data[xp + size_t(y * g.w + x)] += share;
  });
}

/// The mean's gradient: dy broadcast over H and W, scaled.
std::vector<Node *> gradGlobalAvgPool2d(Builder &b, const Node &n, Node *dy) {
  const Shape &x = n.inputs[0]->type.shape;
  return {b.scale(b.broadcastTo(dy, x), 1.0 / double(x[2] * x[3]))};
}

void refGlobalAvgPool2d(RefOps o, const AttrMap &, RefTensor &out) {
  const Shape &x = o[0]->shape;
  const int64_t plane = x[2] * x[3];
  for (size_t p = 0; p < out.data.size(); ++p) {
    double s = 0;
    for (int64_t i = 0; i < plane; ++i) s += o[0]->data[p * size_t(plane) + size_t(i)];
    out.data[p] = s / double(plane);
  }
}

} // namespace

void addPoolRules(RuleTable &t) {
  t[size_t(OpKind::MaxPool2d)] = {gradMaxPool2d, refMaxPool2d};
  t[size_t(OpKind::MaxPool2dGrad)] = {nullptr, refMaxPool2dGrad};
  t[size_t(OpKind::AvgPool2d)] = {gradAvgPool2d, refAvgPool2d};
  t[size_t(OpKind::AvgPool2dGrad)] = {nullptr, refAvgPool2dGrad};
  t[size_t(OpKind::GlobalAvgPool2d)] = {gradGlobalAvgPool2d, refGlobalAvgPool2d};
}

} // namespace mpc::ir
