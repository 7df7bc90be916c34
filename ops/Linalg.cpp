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

/// Tensor parallelism (ops/Layout.h). Each operand axis is a batch axis, a
/// row of the result (a's m), a column (b's n) or contracted (k):
///   k split on either operand           -> P (both split along k);
///   a's m split                         -> S(result m), b replicated;
///   b's n split                         -> S(result n), a replicated;
///   a batch axis split                  -> that result axis, on both;
///   one operand P, the other replicated -> P (the product is bilinear).
/// The accumulator c takes the product's layout; when it is P and the
/// product would be R, a is made P instead (a local zero, no message).
ShardResult shardMatMul(const ShardQuery &q) {
  const TensorType &a = q.operands[0], &b = q.operands[1];
  const bool ta = getBool(q.attrs, "transpose_a"), tb = getBool(q.attrs, "transpose_b");
  const int ra = int(a.rank()), rb = int(b.rank()), rr = int(q.result.rank());
  const int aM = ta ? ra - 1 : ra - 2, aK = ta ? ra - 2 : ra - 1;
  const int bK = tb ? rb - 1 : rb - 2, bN = tb ? rb - 2 : rb - 1;
  const Layout &la = q.layouts[0], &lb = q.layouts[1];
  const bool hasC = q.operands.size() == 3;
  auto done = [&](Layout opA, Layout opB, Layout result) {
    if (hasC && q.layouts[2].partial() && result.replicated()) {
      opA = Layout::p();
      result = Layout::p();
    }
    ShardResult r;
    r.operands = {opA, opB};
    if (hasC) r.operands.push_back(result);
    r.result = result;
    return r;
  };
  if ((la.split() && la.axis == aK) || (lb.split() && lb.axis == bK))
    return done(Layout::s(aK), Layout::s(bK), Layout::p());
  if (la.split() && la.axis == aM) return done(la, Layout::r(), Layout::s(rr - 2));
  if (lb.split() && lb.axis == bN) return done(Layout::r(), lb, Layout::s(rr - 1));
  // A split batch axis: the result axis it meets, and each operand's own
  // axis there unless it broadcasts along it.
  for (int i = 0; i < 2; ++i) {
    const Layout &l = q.layouts[size_t(i)];
    const TensorType &t = q.operands[size_t(i)];
    if (!l.split() || l.axis >= int(t.rank()) - 2) continue;
    int resultAxis = l.axis + rr - int(t.rank());
    if (t.shape[size_t(l.axis)] != q.result.shape[size_t(resultAxis)]) continue;
    auto own = [&](const TensorType &o) {
      int axis = resultAxis - (rr - int(o.rank()));
      return axis >= 0 && axis < int(o.rank()) - 2 &&
                     o.shape[size_t(axis)] == q.result.shape[size_t(resultAxis)]
                 ? Layout::s(axis)
                 : Layout::r();
    };
    return done(own(a), own(b), Layout::s(resultAxis));
  }
  if (la.partial() != lb.partial())
    return done(la.partial() ? Layout::p() : Layout::r(), lb.partial() ? Layout::p() : Layout::r(),
                Layout::p());
  ShardResult r = done(Layout::r(), Layout::r(), Layout::r());
  if (la.partial() && lb.partial()) r.why = "a product of two partial sums is not one";
  return r;
}

} // namespace

void addLinalgSchemas(std::vector<OpSchema> &t) {
  OpSchema r = makeSchema(OpKind::MatMul, "matmul", "Linalg",
                          "matrix product op(a) x op(b) over the last two axes of f32 operands of "
                          "rank >= 2, op an optional transpose, leading batch axes broadcasting "
                          "(numpy.matmul), plus c when given (gradient accumulation)",
                          {"a", "b", "c"});
  r.precision = Precision::Low;
  r.f32Accumulator = 2; // weight gradients summed over micro-batches in f32
  r.minArity = 2;
  r.attrs = {attr("transpose_a", AttrType::Bool, false,
                  "use the transpose of a (its last two axes)"),
             attr("transpose_b", AttrType::Bool, false,
                  "use the transpose of b (its last two axes)")};
  r.infer = inferMatMul;
  r.flops = flopsMatMul;
  r.batch = batchMatMul;
  r.shard = shardMatMul;
  t.push_back(std::move(r));
}

} // namespace mpc::ops
