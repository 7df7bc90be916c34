//===- ir/ops/Shape.cpp - reshape, transpose and fill --------------------===//
//
// Ops that move or create data without arithmetic: reshape (row-major, one
// dimension may be -1 and is inferred), transpose (a permutation of the axes,
// [] reversing them) and fill (an f32 constant of a given shape, no operands).
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

} // namespace

void addShapeOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::Reshape, "reshape", "Shape",
                      "x with a new shape of the same element count (row-major)", {"x"});
    r.attrs = {attr("shape", AttrType::Ints, std::nullopt,
                    "the result shape; one dimension may be -1 (inferred)")};
    r.infer = inferReshape;
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
}

} // namespace mpc::ir
