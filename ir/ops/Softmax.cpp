//===- ir/ops/Softmax.cpp - the Softmax ops' gradient rules and kernels --===//
//
// The gradient rules of softmax (its backward op softmax_grad), log_softmax
// and causal_mask, and the float64 reference kernels of all the Softmax ops,
// which normalise each lane along the axis stably. The schemas are in
// ops/Softmax.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <algorithm>

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// Applies f(values along the axis, out along the axis) for every lane; both
/// are accessed as ptr[j * inner].
template <typename F>
void forEachLane(const RefTensor &x, const AttrMap &attrs, F f) {
  TensorType xt{DType::F32, x.shape};
  int64_t axis = axisOf(getInt(attrs, "axis"), xt, "softmax");
  AxisSplit s = splitAt(x.shape, axis);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) f(size_t(o * s.size * s.inner + i), s.size, s.inner);
}

/// out = log_softmax(x) (log = true) or softmax(x) along the axis.
void softmaxRef(const RefTensor &x, const AttrMap &attrs, RefTensor &out, bool log) {
  forEachLane(x, attrs, [&](size_t base, int64_t n, int64_t stride) {
    auto at = [&](int64_t j) { return base + size_t(j * stride); };
    double mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x.data[at(j)]);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(x.data[at(j)] - mx);
    double logSum = std::log(sum);
    for (int64_t j = 0; j < n; ++j) {
      double z = x.data[at(j)] - mx;
      out.data[at(j)] = log ? z - logSum : std::exp(z) / sum;
    }
  });
}

/// out = x, with out[..., i, j] = value where j > i.
void causalMaskRef(const RefTensor &x, double value, RefTensor &out) {
  const size_t r = x.shape.size();
  int64_t rows = x.shape[r - 2], cols = x.shape[r - 1];
  int64_t per = rows * cols;
  if (per == 0) return;
  int64_t mats = int64_t(x.data.size()) / per;
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        size_t k = size_t(m * per + i * cols + j);
        out.data[k] = j > i ? value : x.data[k];
      }
}

std::vector<Node *> gradSoftmax(Builder &b, const Node &n, Node *dy) {
  return {b.create(OpKind::SoftmaxGrad, {self(n), dy}, {{"axis", getInt(n.attrs, "axis")}})};
}

void refSoftmax(RefOps o, const AttrMap &a, RefTensor &out) { softmaxRef(*o[0], a, out, false); }

std::vector<Node *> gradLogSoftmax(Builder &b, const Node &n, Node *dy) {
  // dx = dy - softmax(x) * sum(dy, axis), with softmax(x) = exp(y).
  Node *s = b.sum(dy, {getInt(n.attrs, "axis")}, /*keepdims=*/true);
  return {b.sub(dy, b.mul(b.exp(self(n)), s))};
}

void refLogSoftmax(RefOps o, const AttrMap &a, RefTensor &out) { softmaxRef(*o[0], a, out, true); }

std::vector<Node *> gradCausalMask(Builder &b, const Node &, Node *dy) {
  // dy where kept, 0 where masked.
  return {b.create(OpKind::CausalMask, {dy}, {{"value", 0.0}})};
}

void refCausalMask(RefOps o, const AttrMap &a, RefTensor &out) {
  causalMaskRef(*o[0], getFloat(a, "value"), out);
}

void refSoftmaxGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  const RefTensor &y = *o[0], &dy = *o[1];
  forEachLane(y, a, [&](size_t base, int64_t n, int64_t stride) {
    auto at = [&](int64_t j) { return base + size_t(j * stride); };
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += dy.data[at(j)] * y.data[at(j)];
    for (int64_t j = 0; j < n; ++j) out.data[at(j)] = y.data[at(j)] * (dy.data[at(j)] - dot);
  });
}

} // namespace

void addSoftmaxRules(RuleTable &t) {
  t[size_t(OpKind::Softmax)] = {gradSoftmax, refSoftmax};
  t[size_t(OpKind::LogSoftmax)] = {gradLogSoftmax, refLogSoftmax};
  t[size_t(OpKind::CausalMask)] = {gradCausalMask, refCausalMask};
  t[size_t(OpKind::SoftmaxGrad)] = {nullptr, refSoftmaxGrad};
}

} // namespace mpc::ir
