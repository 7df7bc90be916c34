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
  return o[0];
}

} // namespace

void addRandomSchemas(std::vector<OpSchema> &t) {
  OpSchema r = makeSchema(OpKind::Dropout, "dropout", "Random",
                          "x with each element zeroed with probability p and the rest scaled by "
                          "1 / (1 - p); the mask is a function of (plan seed, key, step, "
                          "element); the identity in plans without a loss",
                          {"x"});
  r.attrs = {attr("p", AttrType::Float, 0.5, "probability of zeroing an element, in [0, 1)"),
             attr("key", AttrType::String, std::string(),
                  "the mask's stream; empty: the node's name (the gradient keeps the forward's)"),
             attr("offset", AttrType::Int, int64_t(0),
                  "index of x's first element in the whole batch (set by micro-batching)")};
  r.infer = inferDropout;
  r.flops = flopsPerElement<2>;
  r.batch = rowwiseBatchRule;
  r.traits = kElementwise;
  // Element i of the result reads element i of x only (the mask is drawn
  // from the element's index), so the result may take over x's buffer.
  r.inPlaceOperands = {0};
  t.push_back(std::move(r));
}

} // namespace mpc::ops
