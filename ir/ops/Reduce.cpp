//===- ir/ops/Reduce.cpp - sum's, mean's and broadcast_to's rules --------===//
//
// The gradient rules of sum and mean, which broadcast the gradient back,
// and of their adjoint broadcast_to, which reduces it, and the float64
// reference kernels; the reduced axes are read as the shape rules read them
// (ops/Reduce.h). The schemas are in ops/Reduce.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Reduce.h"

namespace mpc::ir {

using namespace ophelpers;
using ops::reducedAxes;

namespace {

/// The shape with the reduced axes set to 1.
Shape keepdimsShape(const Shape &s, const std::vector<bool> &reduced) {
  Shape k = s;
  for (size_t i = 0; i < k.size(); ++i)
    if (reduced[i]) k[i] = 1;
  return k;
}

/// Sums x into out (whose element count equals the keepdims shape's).
void sumInto(const RefTensor &x, const std::vector<bool> &reduced, RefTensor &out) {
  if (x.data.empty()) return;
  Shape kshape = keepdimsShape(x.shape, reduced);
  std::vector<int64_t> idx(x.shape.size(), 0);
  size_t flat = 0;
  do {
    out.data[size_t(broadcastIndex(idx, kshape))] += x.data[flat++];
  } while (nextIndex(idx, x.shape));
}

int64_t reducedCount(const Shape &s, const std::vector<bool> &reduced) {
  int64_t n = 1;
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) n *= s[i];
  return n;
}

Node *broadcastBack(Builder &b, const Node &n, Node *dy, const char *op) {
  const Node *x = n.inputs[0];
  std::vector<bool> reduced = reducedAxes(op, x->type, n.attrs);
  Shape kshape = keepdimsShape(x->type.shape, reduced);
  Node *g = dy->type.shape == kshape ? dy : b.reshape(dy, kshape);
  return g->type.shape == x->type.shape ? g : b.broadcastTo(g, x->type.shape);
}

std::vector<Node *> gradSum(Builder &b, const Node &n, Node *dy) {
  return {broadcastBack(b, n, dy, "sum")};
}

void refSum(RefOps o, const AttrMap &a, RefTensor &out) {
  TensorType xt{DType::F32, o[0]->shape};
  sumInto(*o[0], reducedAxes("sum", xt, a), out);
}

std::vector<Node *> gradMean(Builder &b, const Node &n, Node *dy) {
  const Node *x = n.inputs[0];
  int64_t count = reducedCount(x->type.shape, reducedAxes("mean", x->type, n.attrs));
  Node *g = broadcastBack(b, n, dy, "mean");
  return {b.scale(g, count > 0 ? 1.0 / double(count) : 0.0)};
}

void refMean(RefOps o, const AttrMap &a, RefTensor &out) {
  TensorType xt{DType::F32, o[0]->shape};
  std::vector<bool> reduced = reducedAxes("mean", xt, a);
  sumInto(*o[0], reduced, out);
  double count = double(reducedCount(o[0]->shape, reduced));
  for (double &v : out.data) v /= count;
}

std::vector<Node *> gradBroadcastTo(Builder &b, const Node &n, Node *dy) {
  return {b.reduceToShape(dy, n.inputs[0]->type.shape)};
}

void refBroadcastTo(RefOps o, const AttrMap &, RefTensor &out) {
  const RefTensor &x = *o[0];
  if (out.data.empty()) return;
  std::vector<int64_t> idx(out.shape.size(), 0);
  size_t flat = 0;
  do {
    out.data[flat++] = x.data[size_t(broadcastIndex(idx, x.shape))];
  } while (nextIndex(idx, out.shape));
}

} // namespace

void addReduceRules(RuleTable &t) {
  t[size_t(OpKind::Sum)] = {gradSum, refSum};
  t[size_t(OpKind::Mean)] = {gradMean, refMean};
  t[size_t(OpKind::BroadcastTo)] = {gradBroadcastTo, refBroadcastTo};
}

} // namespace mpc::ir
