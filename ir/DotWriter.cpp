//===- ir/DotWriter.cpp - a graph as a Graphviz picture -------------------===//
#include "ir/DotWriter.h"

#include "support/Error.h"

#include <map>
#include <sstream>
#include <vector>

namespace mpc::ir {

namespace {

/// A DOT string literal of `lines`: quotes and backslashes escaped, lines
/// joined by DOT's `\n`.
std::string quoted(const std::vector<std::string> &lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\\n";
    for (char c : lines[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
  }
  return out + "\"";
}
std::string quoted(const std::string &s) { return quoted(std::vector<std::string>{s}); }

/// Pale fills for the devices' clusters, in order of first appearance.
const char *const kDeviceFills[] = {"#e8f1fb", "#eaf7e8", "#fdf3e1", "#f3e8f7",
                                    "#e6f6f6", "#fbe9ec", "#f1f1e3", "#ececec"};

std::vector<std::string> label(const Node &n) {
  std::string kind = n.isOp() ? std::string(n.info().name) : nodeKindName(n.kind);
  std::string type = n.type.str();
  if (n.spmd) type += " " + n.spmd->layout.str();
  return {n.name, kind + " " + type};
}

/// The node's attributes: shape, style and colours by what it is.
std::string style(const Node &n) {
  switch (n.kind) {
  case NodeKind::Input: return "shape=ellipse, style=filled, fillcolor=white";
  case NodeKind::Param: return "shape=folder, style=filled, fillcolor=\"#fff7c2\"";
  case NodeKind::State: return "shape=note, style=filled, fillcolor=\"#f2f2f2\"";
  case NodeKind::Op: break;
  }
  if (n.isTransfer()) return "shape=cds, style=\"filled,bold\", color=red, fillcolor=\"#ffd9d9\"";
  if (n.info().has(kCollective))
    return "shape=hexagon, style=\"filled,bold\", color=purple, fillcolor=\"#ead9ff\"";
  if (n.info().has(kOptimizer)) return "shape=component, style=filled, fillcolor=\"#ffc8b0\"";
  return n.backward ? "shape=box, style=\"filled,dashed\", fillcolor=\"#f4f4f4\""
                    : "shape=box, style=\"filled,rounded\", fillcolor=white";
}

} // namespace

std::string writeDot(const Graph &graph) {
  std::vector<const Node *> order;
  try {
    for (const Node *n : graph.topoOrder()) order.push_back(n);
  } catch (const RuleError &) { // a broken graph still draws
    for (const auto &n : graph.nodes()) order.push_back(n.get());
  }
  std::map<std::string, size_t> ids; // node name -> "n<i>"
  std::vector<std::string> devices;   // in order of first appearance
  std::map<std::string, std::vector<const Node *>> byDevice;
  for (const Node *n : order) {
    ids.emplace(n->name, ids.size());
    if (!byDevice.count(n->device)) devices.push_back(n->device);
    byDevice[n->device].push_back(n);
  }
  std::ostringstream os;
  os << "digraph " << quoted(graph.name) << " {\n"
     << "  rankdir=TB;\n"
     << "  node [fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [color=\"#555555\"];\n";
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::string &device = devices[d];
    std::string indent = "  ";
    if (!device.empty()) {
      os << "  subgraph cluster_" << d << " {\n"
         << "    label=" << quoted(device) << "; style=filled; color=\"#999999\"; fillcolor="
         << quoted(kDeviceFills[d % (sizeof kDeviceFills / sizeof *kDeviceFills)]) << ";\n";
      indent = "    ";
    }
    for (const Node *n : byDevice[device])
      os << indent << "n" << ids.at(n->name) << " [label=" << quoted(label(*n)) << ", "
         << style(*n) << "];\n";
    if (!device.empty()) os << "  }\n";
  }
  for (const Node *n : order)
    for (const Node *in : n->inputs) {
      if (!in || !ids.count(in->name)) continue;
      os << "  n" << ids.at(in->name) << " -> n" << ids.at(n->name);
      if (in->device != n->device) os << " [color=red, penwidth=1.5]";
      os << ";\n";
    }
  if (!graph.loss.empty() && ids.count(graph.loss))
    os << "  n" << ids.at(graph.loss) << " [peripheries=2];\n";
  os << "}\n";
  return os.str();
}

} // namespace mpc::ir
