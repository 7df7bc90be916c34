//===- ir/JsonReader.h - model.json -> Graph ----------------------------===//
//
// Reads the JSON model format (docs/ir.md). Every error is a UserError that
// names the file, the JSON pointer of the offending element and, where there
// is one, the node:
//   model.json: error: /nodes/2/inputs/1: unknown value 'h9' in 'h1' (matmul)
// Syntax errors carry line:col. Shapes are inferred while reading (the graph
// comes out with GraphStage::kShaped), so a shape mismatch is reported with
// the node's JSON pointer and both shapes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <memory>
#include <string>

namespace mpc::ir {

/// Parses `text`; `file` is used only in diagnostics.
std::unique_ptr<Graph> readModelJson(const std::string &text, const std::string &file);
/// Reads and parses a model file.
std::unique_ptr<Graph> readModelFile(const std::string &path);

} // namespace mpc::ir
