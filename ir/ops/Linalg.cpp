//===- ir/ops/Linalg.cpp - matmul ----------------------------------------===//
//
// The one linear-algebra op: a rank-2 matrix product with optional transposes
// of either operand, so gradient rules never need an explicit transpose node.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// (rows, cols) of operand `t` after its optional transpose.
std::pair<int64_t, int64_t> logicalDims(const TensorType &t, bool transposed) {
  return transposed ? std::pair{t.shape[1], t.shape[0]} : std::pair{t.shape[0], t.shape[1]};
}

TensorType inferMatMul(std::span<const TensorType> ops, const AttrMap &attrs) {
  const TensorType &a = ops[0], &b = ops[1];
  requireDType(a, DType::F32, "matmul", "a");
  requireDType(b, DType::F32, "matmul", "b");
  if (a.rank() != 2 || b.rank() != 2)
    throw RuleError("matmul needs rank-2 operands: " + pairStr(a, b));
  auto [m, ka] = logicalDims(a, getBool(attrs, "transpose_a"));
  auto [kb, n] = logicalDims(b, getBool(attrs, "transpose_b"));
  if (ka != kb) throw RuleError("shape mismatch: " + pairStr(a, b));
  TensorType result{DType::F32, {m, n}};
  if (ops.size() == 3 && ops[2] != result)
    throw RuleError("matmul accumulator 'c' " + ops[2].str() + " does not match the product " +
                    result.str());
  return result;
}

std::vector<Node *> gradMatMul(Builder &b, const Node &node, Node *dy) {
  Node *x = node.inputs[0], *w = node.inputs[1];
  bool ta = getBool(node.attrs, "transpose_a"), tb = getBool(node.attrs, "transpose_b");
  // C = op(A) op(B) [+ C0]; each case writes dA and dB directly in A's and
  // B's layout; the accumulator's gradient is dy itself.
  std::vector<Node *> g;
  if (!ta && !tb) g = {b.matmul(dy, w, false, true), b.matmul(x, dy, true, false)};
  else if (ta && !tb) g = {b.matmul(w, dy, false, true), b.matmul(x, dy, false, false)};
  else if (!ta && tb) g = {b.matmul(dy, w, false, false), b.matmul(dy, x, true, false)};
  else g = {b.matmul(w, dy, true, true), b.matmul(dy, x, true, true)};
  if (node.inputs.size() == 3) g.push_back(dy);
  return g;
}

void refMatMul(std::span<RefTensor *const> ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &a = *ops[0], &b = *ops[1];
  bool ta = getBool(attrs, "transpose_a"), tb = getBool(attrs, "transpose_b");
  int64_t m = out.shape[0], n = out.shape[1];
  int64_t k = ta ? a.shape[0] : a.shape[1];
  auto at = [&](int64_t i, int64_t p) {
    return ta ? a.data[size_t(p * a.shape[1] + i)] : a.data[size_t(i * a.shape[1] + p)];
  };
  auto bt = [&](int64_t p, int64_t j) {
    return tb ? b.data[size_t(j * b.shape[1] + p)] : b.data[size_t(p * b.shape[1] + j)];
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += at(i, p) * bt(p, j);
      out.data[size_t(i * n + j)] = s + (ops.size() == 3 ? ops[2]->data[size_t(i * n + j)] : 0.0);
    }
}

double flopsMatMul(std::span<const TensorType> ops, const TensorType &result,
                   const AttrMap &attrs) {
  int64_t k = getBool(attrs, "transpose_a") ? ops[0].shape[0] : ops[0].shape[1];
  double accumulate = ops.size() == 3 ? double(result.numElements()) : 0.0;
  return 2.0 * double(result.shape[0]) * double(result.shape[1]) * double(k) + accumulate;
}

/// Rows of op(a) are rows of the result; anything else contracts over, or
/// moves, the batch axis.
BatchResult batchMatMul(const BatchQuery &q) {
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
                    "matrix product op(a) x op(b) of rank-2 f32 operands, op an optional "
                    "transpose, plus c when given (gradient accumulation)",
                    {"a", "b", "c"});
  r.minArity = 2;
  r.attrs = {attr("transpose_a", AttrType::Bool, false, "use the transpose of a"),
             attr("transpose_b", AttrType::Bool, false, "use the transpose of b")};
  r.infer = inferMatMul;
  r.grad = gradMatMul;
  r.reference = refMatMul;
  r.flops = flopsMatMul;
  r.batch = batchMatMul;
  t.push_back(std::move(r));
}

} // namespace mpc::ir
