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

#include <string>

namespace mpc::ir {

std::string writeModelJson(const Graph &graph);

} // namespace mpc::ir
