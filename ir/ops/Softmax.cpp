//===- ir/ops/Softmax.cpp - softmax, log_softmax and softmax_grad --------===//
//
// Normalisations along one axis, computed stably (the maximum along the axis
// is subtracted before exponentiating). softmax_grad is softmax's backward
// op, y * (dy - sum(dy * y, axis)); it is not differentiable itself.
// causal_mask, the attention mask that feeds softmax, sets the entries above
// the diagonal of the last two axes to a constant (-1e9: exp underflows to 0).
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

TensorType inferCausalMask(TypeOps ops, const AttrMap &) {
  requireDType(ops[0], DType::F32, "causal_mask", "x");
  if (ops[0].rank() < 2)
    throw RuleError("causal_mask needs x of rank >= 2 (rows and columns), got " + ops[0].str());
  return ops[0];
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
    OpInfo r = makeOp(OpKind::CausalMask, "causal_mask", "Softmax",
                      "x with x[..., i, j] = value where j > i (above the diagonal of the last "
                      "two axes: row i, column j)",
                      {"x"});
    r.attrs = {attr("value", AttrType::Float, -1e9, "the value of the masked entries")};
    r.infer = inferCausalMask;
    r.grad = [](Builder &b, const Node &, Node *dy) -> std::vector<Node *> {
      // dy where kept, 0 where masked.
      return {b.create(OpKind::CausalMask, {dy}, {{"value", 0.0}})};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      causalMaskRef(*o[0], getFloat(a, "value"), out);
    };
    r.flops = noFlops;
    // Both backends copy the kept entries only when the result is another
    // buffer, so the result may take over x's.
    r.inPlaceOperands = {0};
    // The mask depends on the row index of axis -2: axis 0 must be another one.
    r.batch = [](const BatchQuery &q) {
      if (q.operands[0].rank() < 3)
        throw RuleError("its rows (axis -2) are axis 0, the batch axis, and the mask depends "
                        "on the row index");
      return rowwiseBatchRule(q);
    };
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
