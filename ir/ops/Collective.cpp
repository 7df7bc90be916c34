//===- ir/ops/Collective.cpp - the collectives' reference kernels --------===//
//
// float64 reference kernels of all_reduce, reduce_scatter and all_gather: the
// sum of the contributions in the group's order, the member's part of it, the
// parts joined. Collectives have no gradient rule yet: they are inserted
// after autodiff (the gradient all-reduce of data parallelism), so autodiff
// never meets one. The schemas are in ops/Collective.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Collective.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// The sum of every operand, in operand order.
std::vector<double> sumInOrder(RefOps o) {
  std::vector<double> sum = o[0]->data;
  for (size_t i = 1; i < o.size(); ++i)
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += o[i]->data[k];
  return sum;
}

void allReduceRef(RefOps o, const AttrMap &, RefTensor &out) { out.data = sumInOrder(o); }

void reduceScatterRef(RefOps o, const AttrMap &attrs, RefTensor &out) {
  std::vector<double> sum = sumInOrder(o);
  ops::ElementRange part =
      ops::partOf(int64_t(sum.size()), o.size(), size_t(getInt(attrs, "shard")));
  out.data.assign(sum.begin() + part.begin, sum.begin() + part.end);
}

void allGatherRef(RefOps o, const AttrMap &, RefTensor &out) {
  out.data.clear();
  for (const RefTensor *x : o) out.data.insert(out.data.end(), x->data.begin(), x->data.end());
}

} // namespace

void addCollectiveRules(RuleTable &t) {
  t[size_t(OpKind::AllReduce)] = {nullptr, allReduceRef};
  t[size_t(OpKind::ReduceScatter)] = {nullptr, reduceScatterRef};
  t[size_t(OpKind::AllGather)] = {nullptr, allGatherRef};
}

} // namespace mpc::ir
