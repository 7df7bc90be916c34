//===- ir/Verifier.h - structural and stage checks of a graph -----------===//
//
// Checks, and reports *all* violations, each naming the node, its op and its
// device:
//   * structure: unique names, operands defined in this graph, no cycles,
//     outputs and loss exist, loss is a scalar f32;
//   * ops: arity and attributes match the op schema;
//   * types: the op's shape rule, re-run, gives the stored type;
//   * stages claimed in Graph::stages: kPlaced (every node on a concrete,
//     valid device), kCopiesExplicit (an operand on another device only
//     through copy, at most one copy per (value, destination)),
//     kDifferentiated (every param that reaches the loss has a gradient on
//     its device), kOptimized (updates and state colocated with their param).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace mpc::ir {

/// Empty when the graph is valid; otherwise one message per violation.
std::vector<std::string> verifyGraph(const Graph &graph);

} // namespace mpc::ir
