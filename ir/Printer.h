//===- ir/Printer.h - the text form of a graph --------------------------===//
//
// One stable, diff-friendly line per node in topological order, the form
// --print-after and the lit tests check:
//
//   graph @regression3 {
//     %x = input : f32[100,2] @cpu:0
//     %w0 = param {init=xavier(2.24)} : f32[2,2] @cpu:0
//     %h0 = matmul(%x, %w0) {transpose_a=false, transpose_b=false} : f32[100,2] @cpu:0
//     ...
//     loss %loss
//     outputs %z2
//   }
//
// Attributes are sorted by name; the device is omitted while empty. Backward
// nodes carry no special marker other than their derived names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <ostream>
#include <string>

namespace mpc::ir {

void printGraph(const Graph &graph, std::ostream &os);
std::string printGraph(const Graph &graph);
/// One node's line, without indentation or newline.
std::string printNode(const Node &node);

} // namespace mpc::ir
