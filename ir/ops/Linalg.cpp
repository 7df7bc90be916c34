//===- ir/ops/Linalg.cpp - matmul's gradient rule and reference kernel --===//
//
// matmul's schema (operands, attributes, shape rule) is in ops/Linalg.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// The leading (batch) axes of a matmul operand: all but the last two.
Shape batchDims(const Shape &s) { return Shape(s.begin(), s.end() - 2); }

/// dB of a product whose `a` has batch axes and whose `b` is rank 2, without
/// transpose_a: the batch folds into the rows, [P, M, K] -> [P*M, K], and one
/// rank-2 product gives the sum over the batch (instead of a batched product
/// and a reduction).
Node *foldedGradB(Builder &b, Node *x, Node *dy, bool tb) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < x->type.shape.size(); ++i) rows *= x->type.shape[i];
  Node *x2 = b.reshape(x, {rows, x->type.shape.back()});
  Node *dy2 = b.reshape(dy, {rows, dy->type.shape.back()});
  return tb ? b.matmul(dy2, x2, true, false) : b.matmul(x2, dy2, true, false);
}

std::vector<Node *> gradMatMul(Builder &b, const Node &node, Node *dy) {
  Node *x = node.inputs[0], *w = node.inputs[1];
  bool ta = getBool(node.attrs, "transpose_a"), tb = getBool(node.attrs, "transpose_b");
  // C = op(A) op(B) [+ C0]; each case writes dA and dB directly in A's and
  // B's layout (transposes act on the last two axes); the accumulator's
  // gradient is dy itself. Batched results come in the broadcast batch
  // shape; the autodiff driver sums them back to the operand's
  // (reduceToShape).
  Node *da = !ta ? b.matmul(dy, w, false, !tb) : b.matmul(w, dy, tb, true);
  Node *db = nullptr;
  if (w->type.rank() == 2 && x->type.rank() > 2 && !ta) db = foldedGradB(b, x, dy, tb);
  else if (!tb) db = b.matmul(x, dy, !ta, false);
  else db = b.matmul(dy, x, true, ta);
  std::vector<Node *> g = {da, db};
  if (node.inputs.size() == 3) g.push_back(dy);
  return g;
}

void refMatMul(std::span<RefTensor *const> ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &a = *ops[0], &b = *ops[1];
  bool ta = getBool(attrs, "transpose_a"), tb = getBool(attrs, "transpose_b");
  const size_t r = out.shape.size();
  int64_t m = out.shape[r - 2], n = out.shape[r - 1];
  int64_t ar = a.shape[a.shape.size() - 2], ac = a.shape.back();
  int64_t br = b.shape[b.shape.size() - 2], bc = b.shape.back();
  int64_t k = ta ? ar : ac;
  Shape batch = batchDims(out.shape), aBatch = batchDims(a.shape), bBatch = batchDims(b.shape);
  std::vector<int64_t> idx(batch.size(), 0);
  size_t flat = 0; // batch index into out
  if (out.data.empty()) return;
  do {
    const double *pa = a.data.data() + broadcastIndex(idx, aBatch) * ar * ac;
    const double *pb = b.data.data() + broadcastIndex(idx, bBatch) * br * bc;
    auto at = [&](int64_t i, int64_t p) { return ta ? pa[p * ac + i] : pa[i * ac + p]; };
    auto bt = [&](int64_t p, int64_t j) { return tb ? pb[j * bc + p] : pb[p * bc + j]; };
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        size_t o = flat * size_t(m * n) + size_t(i * n + j);
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += at(i, p) * bt(p, j);
        out.data[o] = s + (ops.size() == 3 ? ops[2]->data[o] : 0.0);
      }
    ++flat;
  } while (nextIndex(idx, batch));
}

} // namespace

void addLinalgRules(RuleTable &t) { t[size_t(OpKind::MatMul)] = {gradMatMul, refMatMul}; }

} // namespace mpc::ir
