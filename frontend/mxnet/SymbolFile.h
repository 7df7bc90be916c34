//===- frontend/mxnet/SymbolFile.h - MXNet *-symbol.json, normalised ------===//
//
// Reads an MXNet symbol file of any era into one form (docs/import-mxnet.md):
//   * 0.8: op parameters in "param", annotations in "attr", and
//     "backward_source_id" (ignored);
//   * 0.9: everything in "attr";
//   * >= 1.0: everything in "attrs", annotations as hidden keys
//     ("__ctx_group__", "__lr_mult__", "__shape__", ...).
// Op parameters stay strings (AttrParse.h reads them); the annotations mpc
// uses are lifted out of the attribute map into fields, whichever spelling
// the file used ("ctx_group" or "__ctx_group__"). Node inputs and heads may
// have 2 or 3 fields; "arg_nodes", "node_row_ptr" and the top-level "attrs"
// are optional. Structural errors (bad JSON, a dangling input, a cycle) are
// UserErrors naming the file, the JSON pointer and the node.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpc::frontend::mxnet {

/// One output of a node: (node index, output index).
struct Entry {
  int node = 0;
  int index = 0;
};

struct SymbolNode {
  std::string name;
  std::string op; ///< "null" for a variable
  std::vector<Entry> inputs;
  /// Op parameters (and any annotation mpc does not use), as written.
  std::map<std::string, std::string> attrs;
  /// Annotations, from either spelling (hidden or plain key).
  std::optional<std::string> ctxGroup, lrMult, wdMult, shape, dtype, init;
  std::string pointer; ///< "/nodes/3"

  bool isVariable() const { return op == "null"; }
  /// "'fc1' (FullyConnected)", "'data' (variable)"
  std::string describe() const;
};

struct SymbolFile {
  std::string file;
  std::vector<SymbolNode> nodes;
  std::vector<Entry> heads;
  /// "0.8" (param + attr), "0.9" (attr) or "1.x" (attrs): the era the node
  /// keys say; mxnet_version from the top-level attrs when present.
  std::string era;
  std::optional<int> mxnetVersion;
  /// Node indices, operands before users (ties by index).
  std::vector<int> order;
};

/// Parses and checks a symbol file's text; `file` names it in diagnostics.
SymbolFile parseSymbolFile(const std::string &text, const std::string &file);
SymbolFile readSymbolFile(const std::string &path);

} // namespace mpc::frontend::mxnet
