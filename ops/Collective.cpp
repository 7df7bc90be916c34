//===- ops/Collective.cpp - all_reduce, reduce_scatter, all_gather --------===//
//
// A collective node is one member of a collective over a group of devices
// (ops/Collective.h). Its operands are the contributions of every member, in
// the group's order: operand i lives on the group's device i, and the node
// runs on one of those devices. This is the one kind of op whose operands
// may sit on other devices than the node (the IR's verifier checks the
// layout; codegen lowers the members into one collective instruction per
// device). The members of one collective are the nodes with the same op and
// the same operands. Their reference kernels are in ir/ops/Collective.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Collective.h"

#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

TensorType collectiveResult(OpKind kind, const TensorType &c, size_t groupSize) {
  const char *name = opName(kind);
  if (groupSize == 0) throw RuleError(std::string(name) + " over an empty group");
  if (kind != OpKind::AllGather) requireDType(c, DType::F32, name, "x");
  if (kind == OpKind::AllReduce) return c;
  if (c.rank() == 0)
    throw RuleError(std::string(name) + " needs an axis 0 to split or join, got scalar " + c.str());
  TensorType r = c;
  int64_t r0 = int64_t(groupSize);
  if (kind == OpKind::ReduceScatter) {
    if (c.shape[0] % r0 != 0)
      throw RuleError("reduce_scatter over " + std::to_string(groupSize) + " devices: axis 0 of " +
                      c.str() + " does not divide into " + std::to_string(groupSize) +
                      " equal parts");
    r.shape[0] = c.shape[0] / r0;
    return r;
  }
  if (c.dtype != DType::F32 && c.dtype != DType::I32)
    throw RuleError(std::string(name) + " operand 'x' must be f32 or i32, got " + c.str());
  r.shape[0] = c.shape[0] * r0;
  if (!checkedNumElements(r.shape))
    throw RuleError("all_gather of " + std::to_string(groupSize) + " parts " + c.str() +
                    " has too many elements");
  return r;
}

namespace {

/// Every contribution has the same type; the result is the collective's.
TensorType inferMembers(OpKind kind, TypeOps ops) {
  for (size_t i = 1; i < ops.size(); ++i)
    if (ops[i] != ops[0])
      throw RuleError(std::string(opName(kind)) + " contributions differ: " +
                      pairStr(ops[0], ops[i]) + " (operands 0 and " + std::to_string(i) + ")");
  return collectiveResult(kind, ops[0], ops.size());
}

double sumFlops(TypeOps ops, const TensorType &, const AttrMap &) {
  return double(ops.size() - 1) * elems(ops[0]);
}

OpSchema member(OpKind kind, const char *name, const char *doc) {
  OpSchema r = makeSchema(kind, name, "Collective", doc, {"x"});
  r.variadic = true;
  r.traits = kCollective;
  return r;
}

} // namespace

void addCollectiveSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = member(OpKind::AllReduce, "all_reduce",
                        "the sum of x0, x1, ... (one per device of the group, in order), on "
                        "the node's device; summed in the group's order (not differentiable)");
    r.infer = [](TypeOps o, const AttrMap &) { return inferMembers(OpKind::AllReduce, o); };
    r.flops = sumFlops;
    // Across data-parallel replicas whose groups are tensor-parallel: every
    // contribution in one layout, summed part by part (a sum of partial
    // sums is one).
    r.shard = [](const ShardQuery &q) { return elementwiseRule(q, Linearity::Sum); };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = member(OpKind::ReduceScatter, "reduce_scatter",
                        "part `shard` (rows along axis 0) of the sum of x0, x1, ... summed in "
                        "the group's order (not differentiable)");
    r.attrs = {attr("shard", AttrType::Int, std::nullopt,
                    "which of the R equal parts of axis 0 this member keeps: its device's "
                    "position in the group")};
    r.infer = [](TypeOps o, const AttrMap &a) {
      TensorType t = inferMembers(OpKind::ReduceScatter, o);
      int64_t shard = getInt(a, "shard");
      if (shard < 0 || shard >= int64_t(o.size()))
        throw RuleError("reduce_scatter shard " + std::to_string(shard) + " is not a member of " +
                        "a group of " + std::to_string(o.size()));
      return t;
    };
    r.flops = sumFlops;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = member(OpKind::AllGather, "all_gather",
                        "x0, x1, ... (one per device of the group) joined along axis 0 in the "
                        "group's order (not differentiable)");
    r.infer = [](TypeOps o, const AttrMap &) { return inferMembers(OpKind::AllGather, o); };
    r.flops = noFlops;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
