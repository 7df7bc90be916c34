//===- ir/DotWriter.h - a graph as a Graphviz picture ---------------------===//
//
// `mpc opt --emit=dot` and `mpc compile --emit=dot` draw the graph at any
// stage of the pipeline as Graphviz DOT (`dot -Tsvg graph.dot -o graph.svg`):
//   * nodes clustered by device (a device set of a tensor-parallel group is
//     a cluster of its own), each device's cluster in its own colour;
//   * copies (transfers) as red arrows, collectives as purple hexagons,
//     both bold, so communication stands out;
//   * leaves as ellipses (inputs), folders (params) and notes (state);
//   * backward nodes dashed, optimizer updates as components in salmon;
//   * each node labelled with its name, op and type (and its layout in a
//     tensor-parallel group);
//   * edges from each operand to its user, red where they cross devices.
// The output is deterministic: nodes in topological order, clusters in the
// order their devices first appear.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>

namespace mpc::ir {

std::string writeDot(const Graph &graph);

} // namespace mpc::ir
