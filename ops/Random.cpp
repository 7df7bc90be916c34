//===- ops/Random.cpp - dropout ------------------------------------------===//
//
// dropout keeps each element with probability 1 - p and scales the kept ones
// by 1 / (1 - p). Its mask is a pure function of (plan seed, node, step,
// element index) through the counter-based generator of support/Philox.h,
// so it needs no state and nothing is stored between forward and backward:
// the gradient is dropout of dy with the same key, which draws the same
// mask. One device against N, pipelined against not, CPU against CUDA, and a
// resumed run against an uninterrupted one all draw the same masks.
//
// Attributes beyond p say which mask: `key` names the stream (empty: the
// node's own name, which the interpreter and codegen substitute, and which
// the gradient rule writes out so the backward node shares it), `offset` is
// the index of x's first element in the whole batch (micro-batching sets it
// for each micro-batch's copy). The run's seed and step come from the
// runtime (the interpreter passes them as the attributes `seed` and `step`
// to the reference kernel).
//
// Plans without a loss (inference) drop dropout altogether: the canonicalize
// pass replaces it by its operand.
//
// Its gradient rule and reference kernel are in ir/ops/Random.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

namespace {

TensorType inferDropout(TypeOps o, const AttrMap &a) {
  requireDType(o[0], DType::F32, "dropout", "x");
  const double p = getFloat(a, "p");
  if (!(p >= 0.0 && p < 1.0))
    throw RuleError("dropout p must be in [0, 1), got " + std::to_string(p));
  const int64_t parts = getInt(a, "parts"), part = getInt(a, "part"), inner = getInt(a, "inner");
  if (parts < 1 || part < 0 || part >= parts || inner < 1 || (parts > 1 && o[0].numElements() % inner != 0))
    throw RuleError("dropout part " + std::to_string(part) + " of " + std::to_string(parts) +
                    " in runs of " + std::to_string(inner) + " does not fit x " + o[0].str() +
                    " (parts >= 1, 0 <= part < parts, inner >= 1 dividing x's elements)");
  return o[0];
}

/// Tensor parallelism (ops/Layout.h): the mask is the whole tensor's, so a
/// part along axis d draws its elements' whole indices: runs of
/// shape[d]/t x (the axes after d) elements, part `part` of each block of t
/// runs. Linear in x (a fixed mask times x), so P stays P.
ShardResult shardDropout(const ShardQuery &q) {
  const Layout l = q.layouts[0];
  if (!l.split()) return {{l}, l, {}, {}, {}};
  ShardResult r{{l}, l, {}, "part", {}};
  if (getInt(q.attrs, "parts") != 1) return r; // a member's own: already a part
  r.localAttrs = q.attrs;
  int64_t inner = q.result.shape[size_t(l.axis)] / q.parts;
  for (size_t d = size_t(l.axis) + 1; d < q.result.shape.size(); ++d) inner *= q.result.shape[d];
  r.localAttrs["parts"] = q.parts;
  r.localAttrs["inner"] = inner;
  return r;
}

} // namespace

void addRandomSchemas(std::vector<OpSchema> &t) {
  OpSchema r = makeSchema(OpKind::Dropout, "dropout", "Random",
                          "x with each element zeroed with probability p and the rest scaled by "
                          "1 / (1 - p); the mask is a function of (plan seed, key, step, "
                          "element); the identity in plans without a loss",
                          {"x"});
  r.precision = Precision::Follow;
  r.attrs = {attr("p", AttrType::Float, 0.5, "probability of zeroing an element, in [0, 1)"),
             attr("key", AttrType::String, std::string(),
                  "the mask's stream; empty: the node's name (the gradient keeps the forward's)"),
             attr("offset", AttrType::Int, int64_t(0),
                  "index of x's first element in the whole batch (set by micro-batching)"),
             attr("parts", AttrType::Int, int64_t(1),
                  "x is one of this many equal parts of the whole along an axis (set by "
                  "tensor parallelism): the whole is blocks of `parts` runs of `inner` "
                  "elements"),
             attr("part", AttrType::Int, int64_t(0),
                  "which run of each block x holds: element j of x is element offset + "
                  "((j / inner) * parts + part) * inner + j % inner of the whole"),
             attr("inner", AttrType::Int, int64_t(1), "the elements of one run")};
  r.infer = inferDropout;
  r.shard = shardDropout;
  r.flops = flopsPerElement<2>;
  r.batch = rowwiseBatchRule;
  r.traits = kElementwise;
  // Element i of the result reads element i of x only (the mask is drawn
  // from the element's index), so the result may take over x's buffer.
  r.inPlaceOperands = {0};
  t.push_back(std::move(r));
}

} // namespace mpc::ops
