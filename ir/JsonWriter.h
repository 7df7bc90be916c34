//===- ir/JsonWriter.h - Graph -> model.json ----------------------------===//
//
// Writes a graph in the JSON model format so that readModelJson gives back
// the same graph (names, ops, attributes, types, devices, inits, optimizer,
// stage flags, gradients map). Nodes created by passes are written like user
// nodes; state tensors go to "state".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace mpc::ir {

/// The model as JSON text (two-space indented, one entry per line, ending in
/// a newline). Floats are written with round-trip precision.
std::string writeModelJson(const Graph &graph);

/// Name of a stage flag in the "stages" list: "shaped", "placed",
/// "copies-explicit", "differentiated", "optimized".
const char *graphStageName(GraphStage stage);
/// The flag named `name`; nullopt when unknown.
std::optional<GraphStage> parseGraphStage(const std::string &name);
/// All stage flags, in pipeline order.
const std::vector<GraphStage> &allGraphStages();

/// "" when `a` and `b` are the same graph as far as the JSON format can tell
/// (names, kinds, ops, operands, attributes, types, devices, inits, origins,
/// backward flags, outputs, loss, optimizer, stages, gradients; not creation
/// indices or source locations); otherwise the first difference found, e.g.
/// "node 'h1': device 'gpu:0' vs 'gpu:1'". Used by round-trip checks.
std::string diffGraphs(const Graph &a, const Graph &b);

} // namespace mpc::ir
