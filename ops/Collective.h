//===- ops/Collective.h - what a collective computes, and its parts -------===//
//
// all_reduce, reduce_scatter and all_gather run over an ordered group of R
// devices. Each member contributes one tensor (its "contribution") and gets
// one result. The facts both the IR and the plan need live here: the type a
// member gets, and how a tensor of n elements splits into the R parts that
// member i reduces or holds.
//
// The reduction order is fixed: element k of the sum is
//   ((c_0[k] + c_1[k]) + c_2[k]) + ... + c_{R-1}[k]
// in the group's order, whatever the transport, the thread timing or the way
// the devices spread over processes. So every member gets the same bits, and
// reduce_scatter followed by all_gather gives exactly all_reduce's result.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/OpKind.h"
#include "ops/Shard.h"
#include "ops/Type.h"

#include <cstddef>
#include <cstdint>

namespace mpc::ops {

/// Whether `kind` is one of the collectives (all_reduce, reduce_scatter,
/// all_gather).
constexpr bool isCollective(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::ReduceScatter || kind == OpKind::AllGather;
}

/// The type every member of a group of `groupSize` gets from a collective
/// whose members each contribute a tensor of type `contribution`:
///   all_reduce:     f32 x -> x's type (the sum);
///   reduce_scatter: f32 x -> x with axis 0 divided by R (the member's part of the sum);
///   all_gather:     x     -> x with axis 0 multiplied by R (the parts joined in group order).
/// Throws RuleError naming the types when they do not allow it.
TensorType collectiveResult(OpKind kind, const TensorType &contribution, size_t groupSize);

/// The tensor whose elements are split into parts: the sum for all_reduce
/// and reduce_scatter (the contribution's size), the joined result for
/// all_gather (the result's size).
inline int64_t collectiveElements(OpKind kind, const TensorType &contribution,
                                  const TensorType &result) {
  return kind == OpKind::AllGather ? result.numElements() : contribution.numElements();
}

} // namespace mpc::ops
