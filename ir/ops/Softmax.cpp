//===- ir/ops/Softmax.cpp - softmax, log_softmax and softmax_grad --------===//
//
// Normalisations along one axis, computed stably (the maximum along the axis
// is subtracted before exponentiating). softmax_grad is softmax's backward
// op, y * (dy - sum(dy * y, axis)); it is not differentiable itself.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <algorithm>

namespace mpc::ir {

using namespace ophelpers;

namespace {

TensorType inferSoftmax(const char *op, TypeOps ops, const AttrMap &attrs) {
  requireDType(ops[0], DType::F32, op, "x");
  if (ops[0].rank() == 0) throw RuleError(std::string(op) + " needs rank >= 1, got " +
                                          ops[0].str());
  axisOf(getInt(attrs, "axis"), ops[0], op);
  return ops[0];
}

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

std::vector<AttrSpec> axisAttr() {
  return {attr("axis", AttrType::Int, int64_t(-1), "the axis to normalise, negative from the end")};
}

/// Normalising along any axis but the batch axis keeps rows independent.
BatchResult batchAlongAxis(const BatchQuery &q) {
  BatchResult res = rowwiseBatchRule(q);
  if (normalizeAxis(getInt(q.attrs, "axis"), q.operands[0].rank()) == 0)
    throw RuleError("it normalises along axis 0, the batch axis");
  return res;
}

} // namespace

void addSoftmaxOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::Softmax, "softmax", "Softmax",
                      "exp(x) / sum(exp(x)) along axis, computed stably", {"x"});
    r.attrs = axisAttr();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferSoftmax("softmax", o, a); };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      return {b.create(OpKind::SoftmaxGrad, {self(n), dy}, {{"axis", getInt(n.attrs, "axis")}})};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      softmaxRef(*o[0], a, out, false);
    };
    r.flops = flopsPerInput<5>;
    r.batch = batchAlongAxis;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::LogSoftmax, "log_softmax", "Softmax",
                      "x - log(sum(exp(x))) along axis, computed stably", {"x"});
    r.attrs = axisAttr();
    r.infer = [](TypeOps o, const AttrMap &a) { return inferSoftmax("log_softmax", o, a); };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      // dx = dy - softmax(x) * sum(dy, axis), with softmax(x) = exp(y).
      Node *s = b.sum(dy, {getInt(n.attrs, "axis")}, /*keepdims=*/true);
      return {b.sub(dy, b.mul(b.exp(self(n)), s))};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      softmaxRef(*o[0], a, out, true);
    };
    r.flops = flopsPerInput<5>;
    r.batch = batchAlongAxis;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::SoftmaxGrad, "softmax_grad", "Softmax",
                      "y * (dy - sum(dy * y, axis)): the gradient of softmax given its "
                      "result y (not differentiable)",
                      {"y", "dy"});
    r.attrs = axisAttr();
    r.infer = [](TypeOps o, const AttrMap &a) {
      requireDType(o[1], DType::F32, "softmax_grad", "dy");
      TensorType y = inferSoftmax("softmax_grad", o.subspan(0, 1), a);
      requireSameType(o[0], o[1]);
      return y;
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &y = *o[0], &dy = *o[1];
      forEachLane(y, a, [&](size_t base, int64_t n, int64_t stride) {
        auto at = [&](int64_t j) { return base + size_t(j * stride); };
        double dot = 0;
        for (int64_t j = 0; j < n; ++j) dot += dy.data[at(j)] * y.data[at(j)];
        for (int64_t j = 0; j < n; ++j) out.data[at(j)] = y.data[at(j)] * (dy.data[at(j)] - dot);
      });
    };
    r.flops = flopsPerInput<4>;
    r.batch = batchAlongAxis;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
