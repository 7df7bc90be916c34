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
// Attributes beyond p say which mask (ops/DropoutMask.h, shared with
// attention's dropout): `key` names the stream (empty: the node's own name,
// which the interpreter and codegen substitute, and which the gradient rule
// writes out so the backward node shares it), `offset` is the index of x's
// first element in the whole batch (micro-batching sets it for each
// micro-batch's copy). The run's seed and step come from the runtime (the
// interpreter passes them as the attributes `seed` and `step` to the
// reference kernel).
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
  checkDropoutMask(a, "p", o[0].numElements(), "dropout");
  return o[0];
}

/// Tensor parallelism (ops/Layout.h): the mask is the whole tensor's, so a
/// part along axis d draws its elements' whole indices: runs of
/// shape[d]/t x (the axes after d) elements, part `part` of each block of t
/// runs. Linear in x (a fixed mask times x), so P stays P.
ShardResult shardDropout(const ShardQuery &q) {
  const Layout l = q.layouts[0];
  if (!l.split()) return {{l}, l, {}, {}, {}};
  ShardResult r{{l}, l, {}, {}, {}};
  splitDropoutMask(r, q.attrs, q.result.shape, l.axis, q.parts);
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
  r.attrs = {attr("p", AttrType::Float, 0.5, "probability of zeroing an element, in [0, 1)")};
  for (AttrSpec &a : dropoutMaskAttrs()) r.attrs.push_back(std::move(a));
  r.mask = {"p", [](TypeOps o) { return o[0].shape; }};
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
