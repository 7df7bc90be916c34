//===- ir/Collectives.h - the members of collectives, checked -----------===//
//
// A collective node (ops/Collective.h) is one member: its operands are the
// contributions of its group's devices, in order, and the members of one
// collective are the nodes with the same op and operands. Once every node has
// a concrete device this checks that each collective can run: contributions
// on distinct devices, each member on one of them, a reduce_scatter member
// keeping the shard of its own position, and exactly one member on every
// device of the group (a device without one would leave the others waiting).
// The verifier reports these for a placed graph; the place pass reports them
// to the user first, as errors in the model.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace mpc::ir {

struct CollectiveProblem {
  const Node *node;
  std::string message;
};

/// Every problem of the graph's collectives (none for a graph without).
std::vector<CollectiveProblem> checkCollectives(const Graph &g);

} // namespace mpc::ir
