//===- passes/AutoPlace.h - contiguous partitioning for auto placement --===//
//
// --placement=auto splits the forward graph, taken in topological order, into
// k contiguous stages (one per device of --devices) so that the most
// expensive stage is as cheap as possible. The chain problem is exposed here,
// separately from the graph, so that tests can compare the solver with a
// brute-force or dynamic-programming optimum on generated chains.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/Pass.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpc::passes {

/// Cost charged per byte that crosses a stage boundary, in FLOPs: a stage pays
/// for the tensors it sends to later stages (see docs/passes.md).
constexpr double kTransferFlopsPerByte = 1.0;

/// A chain of N positions to cut into `stages` contiguous, possibly empty,
/// stages [starts[s], starts[s+1]).
struct ChainProblem {
  std::vector<double> flops;    ///< N: compute cost of each position
  std::vector<double> bytes;    ///< N: resident bytes of each position
  std::vector<double> cutBytes; ///< N+1: bytes crossing the cut before position p
  int stages = 1;
  double transferCost = kTransferFlopsPerByte;
  double memoryLimit = 0; ///< per stage; 0: none
  /// Optional, size stages+1: starts[s] must lie in [minStart[s], maxStart[s]]
  /// (how annotations constrain the cut). Empty: unconstrained.
  std::vector<int> minStart, maxStart;

  int size() const { return int(flops.size()); }
};

struct ChainPartition {
  std::vector<int> starts; ///< stages+1 entries, starts[0] = 0, starts[stages] = N
  double bottleneck = 0;   ///< the largest stageCost of the partition
};

/// Cost of stage [i, j): 0 when empty, otherwise its FLOPs plus
/// transferCost * cutBytes[j] (what it sends across its end; cutBytes[N] = 0).
double stageCost(const ChainProblem &p, int i, int j);
/// Resident bytes of stage [i, j).
double stageBytes(const ChainProblem &p, int i, int j);

struct ChainResult {
  std::optional<ChainPartition> partition; ///< nullopt: no feasible partition
  /// When infeasible: the first position that no stage could take.
  int blockedAt = 0;
};

/// The optimal partition: prefix sums, a greedy feasibility sweep for a given
/// bottleneck, and a binary search on the bottleneck.
ChainResult partitionChain(const ChainProblem &p);

/// --placement=auto on a graph: assigns the devices of the forward op nodes
/// that `pinned` does not already fix; `order` is the graph's topological
/// order. Throws UserError when the memory limit cannot be met or
/// annotations contradict the device order. Prints the cut with --stats.
void autoPlace(const ir::Graph &graph, const std::vector<ir::Node *> &order, PassContext &ctx,
               std::map<const ir::Node *, std::string> &pinned);

} // namespace mpc::passes
