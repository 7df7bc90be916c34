//===- ops/Shape.cpp - reshape, transpose, fill, slice, concat, flatten --===//
//
// Ops that move or create data without arithmetic: reshape (row-major, one
// dimension may be -1 and is inferred), transpose (a permutation of the axes,
// [] reversing them), fill (an f32 constant of a given shape, no operands),
// slice (the range [start, end) along one axis) and concat (any number of
// operands joined along one axis) and flatten ([N, ...] to [N, rest]).
// slice, concat and flatten also carry i32 labels.
// Their gradient rules and reference kernels are in ir/ops/Shape.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Shape.h"

#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

/// The permutation a transpose node applies ([] = reversed axes), checked.
std::vector<int64_t> permOf(const TensorType &x, const AttrMap &attrs) {
  std::vector<int64_t> perm = getInts(attrs, "perm");
  if (perm.empty())
    for (int64_t i = x.rank(); i-- > 0;) perm.push_back(i);
  if (int64_t(perm.size()) != x.rank())
    throw RuleError("transpose perm " + shapeText(perm) + " does not match the rank of " +
                    x.str());
  std::vector<bool> seen(perm.size(), false);
  for (int64_t &p : perm) {
    std::optional<int64_t> a = normalizeAxis(p, x.rank());
    if (!a || seen[size_t(*a)])
      throw RuleError("transpose perm " + shapeText(getInts(attrs, "perm")) +
                      " is not a permutation of the axes of " + x.str());
    seen[size_t(*a)] = true;
    p = *a;
  }
  return perm;
}

/// The normalised axis, start and end of a slice of `x`, checked.
SliceRange sliceOf(const TensorType &x, const AttrMap &attrs) {
  SliceRange r;
  r.axis = axisOf(getInt(attrs, "axis"), x, "slice");
  r.start = getInt(attrs, "start");
  r.end = getInt(attrs, "end");
  int64_t dim = x.shape[size_t(r.axis)];
  if (r.start < 0 || r.start >= r.end || r.end > dim)
    throw RuleError("slice start " + std::to_string(r.start) + ", end " +
                    std::to_string(r.end) + " out of range for axis " +
                    std::to_string(getInt(attrs, "axis")) + " of " + x.str() +
                    ": needs 0 <= start < end <= " + std::to_string(dim));
  return r;
}

/// The normalised concat axis of the operands; checks that they agree with
/// the first one (dtype, rank, every dimension but the axis).
int64_t concatAxisOf(TypeOps ops, const AttrMap &attrs) {
  int64_t attrAxis = getInt(attrs, "axis");
  const TensorType &a = ops[0];
  int64_t axis = axisOf(attrAxis, a, "concat");
  for (size_t k = 1; k < ops.size(); ++k) {
    const TensorType &b = ops[k];
    if (a.dtype != b.dtype)
      throw RuleError("concat operands differ in dtype: " + pairStr(a, b));
    bool same = a.rank() == b.rank();
    for (int64_t i = 0; same && i < a.rank(); ++i)
      same = i == axis || a.shape[size_t(i)] == b.shape[size_t(i)];
    if (!same)
      throw RuleError("concat shape mismatch outside axis " + std::to_string(attrAxis) + ": " +
                      pairStr(a, b) + " (operands x0 and x" + std::to_string(k) + ")");
  }
  return axis;
}

namespace {

TensorType inferReshape(TypeOps ops, const AttrMap &attrs) {
  const TensorType &x = ops[0];
  if (x.dtype != DType::F32 && x.dtype != DType::I32)
    throw RuleError("reshape operand 'x' must be f32 or i32, got " + x.str());
  const Shape &want = getInts(attrs, "shape");
  if (want.size() > kMaxRank)
    throw RuleError("reshape shape " + shapeText(want) + ": " + rankLimitText(want.size()));
  Shape out = want;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (inferred >= 0)
        throw RuleError("reshape shape " + shapeText(want) + " has more than one -1");
      inferred = int(i);
      continue;
    }
    if (want[i] < 0)
      throw RuleError("reshape shape " + shapeText(want) + " has a negative dimension");
    if (want[i] != 0 && known > kMaxElements / want[i])
      throw RuleError("reshape shape " + shapeText(want) + " has too many elements");
    known *= want[i];
  }
  int64_t total = x.numElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      throw RuleError("cannot reshape " + x.str() + " to " + shapeText(want));
    out[size_t(inferred)] = total / known;
  } else if (known != total) {
    throw RuleError("cannot reshape " + x.str() + " to " + shapeText(want) +
                    ": element counts differ");
  }
  return {x.dtype, out};
}

TensorType inferTranspose(TypeOps ops, const AttrMap &attrs) {
  requireDType(ops[0], DType::F32, "transpose", "x");
  std::vector<int64_t> perm = permOf(ops[0], attrs);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = ops[0].shape[size_t(perm[i])];
  return {DType::F32, out};
}

/// Throws unless `t` is f32 or i32 (slice and concat carry labels too).
void requireF32OrI32(const TensorType &t, const char *op, const char *operand) {
  if (t.dtype != DType::F32 && t.dtype != DType::I32)
    throw RuleError(std::string(op) + " operand '" + operand + "' must be f32 or i32, got " +
                    t.str());
}

TensorType inferSlice(TypeOps ops, const AttrMap &attrs) {
  const TensorType &x = ops[0];
  requireF32OrI32(x, "slice", "x");
  SliceRange r = sliceOf(x, attrs);
  Shape out = x.shape;
  out[size_t(r.axis)] = r.end - r.start;
  return {x.dtype, out};
}

TensorType inferConcat(TypeOps ops, const AttrMap &attrs) {
  for (size_t k = 0; k < ops.size(); ++k) {
    std::string name = std::string("x").append(std::to_string(k));
    requireF32OrI32(ops[k], "concat", name.c_str());
  }
  int64_t axis = concatAxisOf(ops, attrs);
  Shape out = ops[0].shape;
  out[size_t(axis)] = 0;
  for (const TensorType &t : ops) {
    int64_t len = t.shape[size_t(axis)];
    if (len > kMaxElements - out[size_t(axis)])
      throw RuleError("concat result has too many elements along axis " +
                      std::to_string(getInt(attrs, "axis")));
    out[size_t(axis)] += len;
  }
  requireValidShape(out, "concat");
  return {ops[0].dtype, out};
}

/// Slicing or joining along any axis but axis 0 keeps the batch's rows
/// independent (the row-wise rule checks that every operand holds them).
BatchResult batchAwayFromAxis0(const BatchQuery &q, const char *op) {
  if (normalizeAxis(getInt(q.attrs, "axis"), q.operands[0].rank()) == 0)
    throw RuleError(std::string(op) + " along axis 0, the batch axis");
  return rowwiseBatchRule(q);
}

/// Tensor parallelism (ops/Layout.h): reshape keeps a split when the split
/// axis' parts stay whole blocks of some result axis e: the axes before the
/// split hold as many elements as the result's before e, and e divides into
/// the parts (q, k and v split by columns become split by heads).
ShardResult shardReshape(const ShardQuery &q) {
  const Layout &l = q.layouts[0];
  if (l.partial()) return {{Layout::p()}, Layout::p(), {}, {}, {}};
  if (!l.split()) return replicatedRule(q);
  const Shape &in = q.operands[0].shape, &out = q.result.shape;
  int64_t before = 1;
  for (int i = 0; i < l.axis; ++i) before *= in[size_t(i)];
  int64_t prefix = 1;
  for (size_t e = 0; e < out.size() && prefix <= before; ++e) {
    if (prefix == before && out[e] % q.parts == 0 && out[e] >= q.parts) {
      ShardResult r{{l}, Layout::s(int(e)), q.attrs, {}, {}};
      r.localAttrs["shape"] = localType(q.result, r.result, q.parts).shape;
      return r;
    }
    prefix *= out[e];
  }
  return replicatedRule(q, "reshape " + q.operands[0].str() + " -> " + q.result.str() +
                               " does not keep the parts of axis " + std::to_string(l.axis) +
                               " whole");
}

/// slice and concat along one axis: a split on another axis passes through
/// (every operand split alike); both are linear, so P stays P.
ShardResult shardAlongOtherAxis(const ShardQuery &q) {
  int64_t axis = *normalizeAxis(getInt(q.attrs, "axis"), q.result.rank());
  const Layout first = q.layouts[0];
  bool same = true;
  for (const Layout &l : q.layouts) same &= l == first;
  if (first.partial() && same) return {std::vector<Layout>(q.layouts.size(), first), first, {}, {}, {}};
  if (first.split() && first.axis != axis) {
    ShardResult r{std::vector<Layout>(q.layouts.size(), first), first, {}, {}, {}};
    return r;
  }
  return replicatedRule(q, first.split() ? "it cuts or joins along the split axis " +
                                               std::to_string(first.axis)
                                         : "");
}

/// A permutation moves a split axis along; P stays P.
ShardResult shardTranspose(const ShardQuery &q) {
  const Layout &l = q.layouts[0];
  if (!l.split()) return {{l}, l, {}, {}, {}};
  std::vector<int64_t> perm = permOf(q.operands[0], q.attrs);
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] == l.axis) return {{l}, Layout::s(int(i)), {}, {}, {}};
  return replicatedRule(q);
}

} // namespace

void addShapeSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Reshape, "reshape", "Shape",
                            "x with a new shape of the same element count (row-major; f32 or i32)",
                            {"x"});
    r.precision = Precision::Follow;
    r.attrs = {attr("shape", AttrType::Ints, std::nullopt,
                    "the result shape; one dimension may be -1 (inferred)")};
    r.infer = inferReshape;
    r.shard = shardReshape;
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
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Transpose, "transpose", "Shape",
                            "x with its axes permuted: result axis i is x axis perm[i]", {"x"});
    r.precision = Precision::Follow;
    r.attrs = {attr("perm", AttrType::Ints, std::vector<int64_t>{},
                    "the permutation; [] reverses the axes")};
    r.infer = inferTranspose;
    r.shard = shardTranspose;
    r.batch = [](const BatchQuery &q) {
      std::vector<int64_t> perm = permOf(q.operands[0], q.attrs);
      if (perm.empty() || perm[0] != 0)
        throw RuleError("transpose moves the batch axis away from axis 0");
      return BatchResult{};
    };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Fill, "fill", "Shape",
                            "an f32 constant of the given shape (no operands)", {});
    r.precision = Precision::Follow;
    r.attrs = {attr("value", AttrType::Float, 0.0, "the value of every element"),
               attr("shape", AttrType::Ints, std::nullopt, "the result shape")};
    r.infer = [](TypeOps, const AttrMap &a) {
      const Shape &s = getInts(a, "shape");
      requireValidShape(s, "fill");
      return TensorType{DType::F32, s};
    };
    r.flops = noFlops;
    r.traits = kLeafConst;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Slice, "slice", "Shape",
                            "the elements [start, end) of x along axis (f32 or i32)", {"x"});
    r.precision = Precision::Follow;
    r.shard = shardAlongOtherAxis;
    r.attrs = {attr("axis", AttrType::Int, int64_t(0),
                    "the sliced axis; negative counts from the end"),
               attr("start", AttrType::Int, std::nullopt,
                    "the first index kept, in [0, end)"),
               attr("end", AttrType::Int, std::nullopt,
                    "one past the last index kept, in (start, x.shape[axis]]")};
    r.infer = inferSlice;
    r.batch = [](const BatchQuery &q) { return batchAwayFromAxis0(q, "it slices"); };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Concat, "concat", "Shape",
                            "x0, x1, ... joined along axis in order (1 to 64 operands, all f32 "
                            "or all i32)",
                            {"x"});
    r.precision = Precision::Follow;
    r.variadic = true;
    r.minArity = 1;
    r.shard = shardAlongOtherAxis;
    r.attrs = {attr("axis", AttrType::Int, int64_t(0),
                    "the joining axis; negative counts from the end")};
    r.infer = inferConcat;
    r.batch = [](const BatchQuery &q) { return batchAwayFromAxis0(q, "it joins"); };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
  {
    // A reshape whose shape follows from x's: what a CNN needs between its
    // last feature map and a dense layer, with no batch size to write down.
    OpSchema r = makeSchema(OpKind::Flatten, "flatten", "Shape",
                            "x [N, ...] as [N, product of the other axes] (row-major; f32 or i32)",
                            {"x"});
    r.precision = Precision::Follow;
    r.infer = [](TypeOps o, const AttrMap &) {
      const TensorType &x = o[0];
      requireF32OrI32(x, "flatten", "x");
      if (x.rank() < 2)
        throw RuleError("flatten needs x of rank >= 2 ([N, ...]), got " + x.str());
      int64_t rest = 1;
      for (size_t i = 1; i < x.shape.size(); ++i) rest *= x.shape[i];
      return TensorType{x.dtype, {x.shape[0], rest}};
    };
    // Axis 0 stays axis 0 with the same rows.
    r.batch = [](const BatchQuery &) { return BatchResult{}; };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
