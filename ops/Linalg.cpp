//===- ops/Linalg.cpp - matmul -------------------------------------------===//
//
// The one linear-algebra op: a matrix product over the last two axes with
// optional transposes of either operand (so gradient rules never need an
// explicit transpose node), leading batch axes broadcasting as numpy.matmul.
// Its gradient rule and reference kernel are in ir/ops/Linalg.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

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

void addLinalgSchemas(std::vector<OpSchema> &t) {
  OpSchema r = makeSchema(OpKind::MatMul, "matmul", "Linalg",
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
  r.flops = flopsMatMul;
  r.batch = batchMatMul;
  t.push_back(std::move(r));
}

} // namespace mpc::ops
