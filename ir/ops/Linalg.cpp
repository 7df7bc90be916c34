//===- ir/ops/Linalg.cpp - matmul ----------------------------------------===//
//
// The one linear-algebra op: a matrix product over the last two axes with
// optional transposes of either operand (so gradient rules never need an
// explicit transpose node), leading batch axes broadcasting as numpy.matmul.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// The leading (batch) axes of a matmul operand: all but the last two.
Shape batchDims(const Shape &s) { return Shape(s.begin(), s.end() - 2); }

/// (rows, cols) of operand `t` after its optional transpose of the last two axes.
std::pair<int64_t, int64_t> logicalDims(const TensorType &t, bool transposed) {
  int64_t r = t.shape[t.shape.size() - 2], c = t.shape.back();
  return transposed ? std::pair{c, r} : std::pair{r, c};
}

TensorType inferMatMul(std::span<const TensorType> ops, const AttrMap &attrs) {
  const TensorType &a = ops[0], &b = ops[1];
  requireDType(a, DType::F32, "matmul", "a");
  requireDType(b, DType::F32, "matmul", "b");
  if (a.rank() < 2 || b.rank() < 2)
    throw RuleError("matmul needs operands of rank >= 2: " + pairStr(a, b));
  auto [m, ka] = logicalDims(a, getBool(attrs, "transpose_a"));
  auto [kb, n] = logicalDims(b, getBool(attrs, "transpose_b"));
  if (ka != kb) throw RuleError("shape mismatch: " + pairStr(a, b));
  std::optional<Shape> batch = broadcastShapes(batchDims(a.shape), batchDims(b.shape));
  if (!batch)
    throw RuleError("matmul batch dimensions do not broadcast: " + pairStr(a, b));
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  requireValidShape(out, "matmul");
  TensorType result{DType::F32, out};
  if (ops.size() == 3) {
    requireDType(ops[2], DType::F32, "matmul", "c");
    if (ops[2] != result)
      throw RuleError("matmul accumulator 'c' " + ops[2].str() +
                      " does not match the product " + result.str());
  }
  return result;
}

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

double flopsMatMul(std::span<const TensorType> ops, const TensorType &result,
                   const AttrMap &attrs) {
  const Shape &a = ops[0].shape;
  int64_t k = getBool(attrs, "transpose_a") ? a[a.size() - 2] : a.back();
  double accumulate = ops.size() == 3 ? elems(result) : 0.0;
  return 2.0 * elems(result) * double(k) + accumulate;
}

/// Rank 2: rows of op(a) are rows of the result; anything else contracts
/// over, or moves, the batch axis. Rank >= 3: axis 0 of the result is a
/// leading batch axis, whose rows are independent; batched operands must
/// hold it as their own axis 0 (the row-wise rule on the batch axes).
BatchResult batchMatMul(const BatchQuery &q) {
  if (q.result.rank() > 2) {
    for (size_t i = 0; i < 2; ++i)
      if (q.classes[i] == BatchClass::Batched && q.operands[i].rank() != q.result.rank())
        throw RuleError(std::string("operand '") + (i == 0 ? "a" : "b") + "' " +
                        q.operands[i].str() + " is batched but its axis 0 is not the result's " +
                        q.result.str() +
                        (q.operands[i].rank() == 2 ? " (a matrix axis)" : " (it broadcasts)"));
    return rowwiseBatchRule(q);
  }
  if (q.classes[1] == BatchClass::Batched)
    throw RuleError(getBool(q.attrs, "transpose_b")
                        ? "operand 'b' is batched and transpose_b moves the batch to axis 1"
                        : "operand 'b' is batched and matmul contracts over its axis 0");
  if (q.classes[0] != BatchClass::Batched)
    throw RuleError("operand 'c' is batched but the product op(a) x op(b) is not");
  if (getBool(q.attrs, "transpose_a"))
    throw RuleError("operand 'a' is batched and transpose_a contracts over its batch axis");
  if (q.classes.size() == 3 && q.classes[2] != BatchClass::Batched)
    throw RuleError("operand 'c' is not batched data but has the batch's rows");
  return {};
}

} // namespace

void addLinalgOps(std::vector<OpInfo> &t) {
  OpInfo r = makeOp(OpKind::MatMul, "matmul", "Linalg",
                    "matrix product op(a) x op(b) over the last two axes of f32 operands of "
                    "rank >= 2, op an optional transpose, leading batch axes broadcasting "
                    "(numpy.matmul), plus c when given (gradient accumulation)",
                    {"a", "b", "c"});
  r.minArity = 2;
  r.attrs = {attr("transpose_a", AttrType::Bool, false,
                  "use the transpose of a (its last two axes)"),
             attr("transpose_b", AttrType::Bool, false,
                  "use the transpose of b (its last two axes)")};
  r.infer = inferMatMul;
  r.grad = gradMatMul;
  r.reference = refMatMul;
  r.flops = flopsMatMul;
  r.batch = batchMatMul;
  t.push_back(std::move(r));
}

} // namespace mpc::ir
