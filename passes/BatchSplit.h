//===- passes/BatchSplit.h - one forward replica per part of the batch ---===//
//
// The engine of the microbatch and data-parallel passes (passes/BatchSplit.cpp
// states the invariant and the algorithm): the batch split into R replicas
// of M micro-batches each.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mpc::passes {

struct BatchSplit {
  int64_t replicas = 1;
  int64_t microbatches = 1;
  /// devices[r - 1]: replica r's device for each device of the placed model.
  std::vector<std::map<std::string, std::string>> devices;
  /// Where messages about the split point ("/pipeline/microbatches",
  /// "--data-parallel").
  std::string where = "/pipeline/microbatches";
};

/// Splits the placed forward graph `g` (before autodiff) as `split` says.
void splitBatch(ir::Graph &g, const BatchSplit &split);

/// Whether `g` was split already (a node holds one part of the batch, or
/// mirrors a data-parallel replica's tensor).
bool isBatchSplit(const ir::Graph &g);

} // namespace mpc::passes
