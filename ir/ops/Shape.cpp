//===- ir/ops/Shape.cpp - reshape, transpose, fill, slice, concat --------===//
//
// Ops that move or create data without arithmetic: reshape (row-major, one
// dimension may be -1 and is inferred), transpose (a permutation of the axes,
// [] reversing them), fill (an f32 constant of a given shape, no operands),
// slice (the range [start, stop) along one axis) and concat (two operands
// joined along one axis). slice and concat also carry i32 labels.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

TensorType inferReshape(TypeOps ops, const AttrMap &attrs) {
  const TensorType &x = ops[0];
  requireDType(x, DType::F32, "reshape", "x");
  const Shape &want = getInts(attrs, "shape");
  Shape out = want;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (inferred >= 0)
        throw RuleError("reshape shape " + shapeStr(want) + " has more than one -1");
      inferred = int(i);
      continue;
    }
    if (want[i] < 0)
      throw RuleError("reshape shape " + shapeStr(want) + " has a negative dimension");
    if (want[i] != 0 && known > kMaxElements / want[i])
      throw RuleError("reshape shape " + shapeStr(want) + " has too many elements");
    known *= want[i];
  }
  int64_t total = x.numElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      throw RuleError("cannot reshape " + x.str() + " to " + shapeStr(want));
    out[size_t(inferred)] = total / known;
  } else if (known != total) {
    throw RuleError("cannot reshape " + x.str() + " to " + shapeStr(want) +
                    ": element counts differ");
  }
  return {DType::F32, out};
}

/// The permutation a transpose node applies ([] = reversed axes), checked.
std::vector<int64_t> permOf(const TensorType &x, const AttrMap &attrs) {
  std::vector<int64_t> perm = getInts(attrs, "perm");
  if (perm.empty())
    for (int64_t i = x.rank(); i-- > 0;) perm.push_back(i);
  if (int64_t(perm.size()) != x.rank())
    throw RuleError("transpose perm " + shapeStr(perm) + " does not match the rank of " +
                    x.str());
  std::vector<bool> seen(perm.size(), false);
  for (int64_t &p : perm) {
    std::optional<int64_t> a = normalizeAxis(p, x.rank());
    if (!a || seen[size_t(*a)])
      throw RuleError("transpose perm " + shapeStr(getInts(attrs, "perm")) +
                      " is not a permutation of the axes of " + x.str());
    seen[size_t(*a)] = true;
    p = *a;
  }
  return perm;
}

TensorType inferTranspose(TypeOps ops, const AttrMap &attrs) {
  requireDType(ops[0], DType::F32, "transpose", "x");
  std::vector<int64_t> perm = permOf(ops[0], attrs);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = ops[0].shape[size_t(perm[i])];
  return {DType::F32, out};
}

void refTranspose(RefOps ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &x = *ops[0];
  if (out.data.empty()) return;
  std::vector<int64_t> perm = permOf(TensorType{DType::F32, x.shape}, attrs);
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> idx(out.shape.size(), 0);
  size_t flat = 0;
  do {
    int64_t src = 0;
    for (size_t i = 0; i < perm.size(); ++i) src += idx[i] * xs[size_t(perm[i])];
    out.data[flat++] = x.data[size_t(src)];
  } while (nextIndex(idx, out.shape));
}

/// Throws unless `t` is f32 or i32 (slice and concat carry labels too).
void requireF32OrI32(const TensorType &t, const char *op, const char *operand) {
  if (t.dtype != DType::F32 && t.dtype != DType::I32)
    throw RuleError(std::string(op) + " operand '" + operand + "' must be f32 or i32, got " +
                    t.str());
}

/// The normalised axis, start and stop of a slice of `x`, checked.
struct SliceRange {
  int64_t axis = 0, start = 0, stop = 0;
};
SliceRange sliceOf(const TensorType &x, const AttrMap &attrs) {
  SliceRange r;
  r.axis = axisOf(getInt(attrs, "axis"), x, "slice");
  r.start = getInt(attrs, "start");
  r.stop = getInt(attrs, "stop");
  int64_t dim = x.shape[size_t(r.axis)];
  if (r.start < 0 || r.start >= r.stop || r.stop > dim)
    throw RuleError("slice start " + std::to_string(r.start) + ", stop " +
                    std::to_string(r.stop) + " out of range for axis " +
                    std::to_string(getInt(attrs, "axis")) + " of " + x.str() +
                    ": needs 0 <= start < stop <= " + std::to_string(dim));
  return r;
}

TensorType inferSlice(TypeOps ops, const AttrMap &attrs) {
  const TensorType &x = ops[0];
  requireF32OrI32(x, "slice", "x");
  SliceRange r = sliceOf(x, attrs);
  Shape out = x.shape;
  out[size_t(r.axis)] = r.stop - r.start;
  return {x.dtype, out};
}

void refSlice(RefOps ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &x = *ops[0];
  // The dtype does not matter to the reference: values are doubles either way.
  SliceRange r = sliceOf(TensorType{DType::F32, x.shape}, attrs);
  AxisSplit s = splitAt(x.shape, r.axis);
  int64_t len = r.stop - r.start;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < s.inner; ++i)
        out.data[size_t((o * len + j) * s.inner + i)] =
            x.data[size_t((o * s.size + r.start + j) * s.inner + i)];
}

/// The normalised concat axis of `a` and `b`; checks that they agree.
int64_t concatAxisOf(const TensorType &a, const TensorType &b, const AttrMap &attrs) {
  int64_t attrAxis = getInt(attrs, "axis");
  int64_t axis = axisOf(attrAxis, a, "concat");
  if (a.dtype != b.dtype)
    throw RuleError("concat operands differ in dtype: " + pairStr(a, b));
  bool same = a.rank() == b.rank();
  for (int64_t i = 0; same && i < a.rank(); ++i)
    same = i == axis || a.shape[size_t(i)] == b.shape[size_t(i)];
  if (!same)
    throw RuleError("concat shape mismatch outside axis " + std::to_string(attrAxis) + ": " +
                    pairStr(a, b));
  return axis;
}

TensorType inferConcat(TypeOps ops, const AttrMap &attrs) {
  requireF32OrI32(ops[0], "concat", "a");
  requireF32OrI32(ops[1], "concat", "b");
  int64_t axis = concatAxisOf(ops[0], ops[1], attrs);
  Shape out = ops[0].shape;
  out[size_t(axis)] += ops[1].shape[size_t(axis)];
  requireValidShape(out, "concat");
  return {ops[0].dtype, out};
}

void refConcat(RefOps ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &a = *ops[0], &b = *ops[1];
  int64_t axis = concatAxisOf(TensorType{DType::F32, a.shape}, TensorType{DType::F32, b.shape},
                              attrs);
  AxisSplit sa = splitAt(a.shape, axis), sb = splitAt(b.shape, axis);
  int64_t len = sa.size + sb.size;
  for (int64_t o = 0; o < sa.outer; ++o)
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < sa.inner; ++i)
        out.data[size_t((o * len + j) * sa.inner + i)] =
            j < sa.size ? a.data[size_t((o * sa.size + j) * sa.inner + i)]
                        : b.data[size_t((o * sb.size + j - sa.size) * sb.inner + i)];
}

} // namespace

void addShapeOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::Reshape, "reshape", "Shape",
                      "x with a new shape of the same element count (row-major)", {"x"});
    r.attrs = {attr("shape", AttrType::Ints, std::nullopt,
                    "the result shape; one dimension may be -1 (inferred)")};
    r.infer = inferReshape;
    r.batch = [](const BatchQuery &q) {
      if (q.result.rank() == 0 || q.result.shape[0] != q.batch)
        throw RuleError("reshape " + q.operands[0].str() + " to " + q.result.str() +
                        " moves rows across the batch axis");
      BatchResult res;
      res.microAttrs = q.attrs;
      Shape want = getInts(q.attrs, "shape");
      if (!want.empty() && want[0] != -1) want[0] = q.batch / q.microbatches;
      res.microAttrs["shape"] = want;
      return res;
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      return {b.reshape(dy, n.inputs[0]->type.shape)};
    };
    r.reference = [](RefOps o, const AttrMap &, RefTensor &out) { out.data = o[0]->data; };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::Transpose, "transpose", "Shape",
                      "x with its axes permuted: result axis i is x axis perm[i]", {"x"});
    r.attrs = {attr("perm", AttrType::Ints, std::vector<int64_t>{},
                    "the permutation; [] reverses the axes")};
    r.infer = inferTranspose;
    r.batch = [](const BatchQuery &q) {
      std::vector<int64_t> perm = permOf(q.operands[0], q.attrs);
      if (perm.empty() || perm[0] != 0)
        throw RuleError("transpose moves the batch axis away from axis 0");
      return BatchResult{};
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      std::vector<int64_t> perm = permOf(n.inputs[0]->type, n.attrs);
      std::vector<int64_t> inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
      return {b.transpose(dy, inverse)};
    };
    r.reference = refTranspose;
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::Fill, "fill", "Shape",
                      "an f32 constant of the given shape (no operands)", {});
    r.attrs = {attr("value", AttrType::Float, 0.0, "the value of every element"),
               attr("shape", AttrType::Ints, std::nullopt, "the result shape")};
    r.infer = [](TypeOps, const AttrMap &a) {
      const Shape &s = getInts(a, "shape");
      requireValidShape(s, "fill");
      return TensorType{DType::F32, s};
    };
    r.grad = [](Builder &, const Node &, Node *) -> std::vector<Node *> { return {}; };
    r.reference = [](RefOps, const AttrMap &a, RefTensor &out) {
      double v = getFloat(a, "value");
      for (double &x : out.data) x = v;
    };
    r.flops = noFlops;
    r.traits = kLeafConst;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::Slice, "slice", "Shape",
                      "the elements [start, stop) of x along axis (f32 or i32)", {"x"});
    r.attrs = {attr("axis", AttrType::Int, int64_t(0),
                    "the sliced axis; negative counts from the end"),
               attr("start", AttrType::Int, std::nullopt, "the first index kept"),
               attr("stop", AttrType::Int, std::nullopt, "one past the last index kept")};
    r.infer = inferSlice;
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      const TensorType &x = n.inputs[0]->type;
      if (x.dtype != DType::F32) return {nullptr};
      SliceRange s = sliceOf(x, n.attrs);
      // dy placed back at [start, stop), zeros elsewhere.
      Node *dx = dy;
      if (s.start > 0) {
        Shape before = x.shape;
        before[size_t(s.axis)] = s.start;
        dx = b.concat(b.fill(0.0, before), dx, s.axis);
      }
      int64_t dim = x.shape[size_t(s.axis)];
      if (s.stop < dim) {
        Shape after = x.shape;
        after[size_t(s.axis)] = dim - s.stop;
        dx = b.concat(dx, b.fill(0.0, after), s.axis);
      }
      return {dx};
    };
    r.reference = refSlice;
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::Concat, "concat", "Shape",
                      "a and b joined along axis (both f32 or both i32)", {"a", "b"});
    r.attrs = {attr("axis", AttrType::Int, int64_t(0),
                    "the joining axis; negative counts from the end")};
    r.infer = inferConcat;
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      const TensorType &ta = n.inputs[0]->type, &tb = n.inputs[1]->type;
      if (ta.dtype != DType::F32) return {nullptr, nullptr};
      int64_t axis = concatAxisOf(ta, tb, n.attrs);
      int64_t na = ta.shape[size_t(axis)], nb = tb.shape[size_t(axis)];
      // A part of length 0 along the axis has no elements: its gradient is an
      // empty constant (slice needs start < stop).
      Node *da = na > 0 ? b.slice(dy, axis, 0, na) : b.fill(0.0, ta.shape);
      Node *db = nb > 0 ? b.slice(dy, axis, na, na + nb) : b.fill(0.0, tb.shape);
      return {da, db};
    };
    r.reference = refConcat;
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
