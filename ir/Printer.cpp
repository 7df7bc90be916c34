//===- ir/Printer.cpp - the text form of a graph ------------------------===//
//
// The form is documented in ir/Printer.h and docs/ir.md. It is deliberately
// free of anything that varies between runs or machines (no file paths, no
// creation indices, no pointer values), so lit tests can check it verbatim.
// The printer never throws on a broken graph: a cycle falls back to creation
// order and a dangling operand prints as %<null>, so a dump taken right
// after a faulty pass still shows what the verifier complains about.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"

#include "support/Error.h"
#include "support/StringUtil.h"

#include <sstream>

namespace mpc::ir {

namespace {

/// Attributes of leaves, in the same `{k=v, ...}` syntax as op attributes.
std::string leafAttrs(const Node &n) {
  std::vector<std::string> parts;
  if (n.init) parts.push_back("init=" + n.init->str());
  if (n.kind == NodeKind::State) parts.push_back("param=" + n.origin);
  // Multipliers only where they differ from 1, so that most models print as before.
  if (n.lrMult != 1.0) parts.push_back("lr_mult=" + attrValueStr(n.lrMult));
  if (!n.mirrorOf.empty()) parts.push_back("mirror_of=" + attrValueStr(n.mirrorOf));
  if (n.shardOf)
    parts.push_back("shard_of=" + attrValueStr(n.shardOf->of) + "[" +
                    std::to_string(n.shardOf->index) + "/" + std::to_string(n.shardOf->count) +
                    "]:" + shapeText(n.shardOf->shape) +
                    (n.shardOf->axis >= 0 ? "/" + std::to_string(n.shardOf->axis) : ""));
  if (n.wdMult != 1.0) parts.push_back("wd_mult=" + attrValueStr(n.wdMult));
  if (n.shard) parts.push_back("shard=" + std::to_string(*n.shard));
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s;
}

std::string opAttrs(const Node &n) {
  std::string s;
  bool first = true;
  for (const auto &[k, v] : n.attrs) {
    s += (first ? "" : ", ") + k + "=" + attrValueStr(v);
    first = false;
  }
  return s;
}

} // namespace

std::string printNode(const Node &node) {
  std::string s = "%" + node.name + " = ";
  std::string attrs;
  if (node.isOp()) {
    s += node.info().name;
    s += "(";
    for (size_t i = 0; i < node.inputs.size(); ++i)
      s += (i ? ", %" : "%") + (node.inputs[i] ? node.inputs[i]->name : std::string("<null>"));
    s += ")";
    attrs = opAttrs(node);
  } else {
    s += nodeKindName(node.kind);
    attrs = leafAttrs(node);
  }
  if (!attrs.empty()) s += " {" + attrs + "}";
  s += " : " + node.type.str();
  if (node.spmd) s += " " + node.spmd->layout.str();
  if (!node.device.empty()) s += " @" + node.device;
  return s;
}

void printGraph(const Graph &graph, std::ostream &os) {
  std::vector<const Node *> order;
  try {
    for (const Node *n : graph.topoOrder()) order.push_back(n);
  } catch (const RuleError &) {
    for (const auto &n : graph.nodes()) order.push_back(n.get());
  }
  os << "graph @" << graph.name << " {\n";
  for (const Node *n : order) os << "  " << printNode(*n) << "\n";
  if (!graph.loss.empty()) os << "  loss %" << graph.loss << "\n";
  if (!graph.outputs.empty()) {
    os << "  outputs ";
    for (size_t i = 0; i < graph.outputs.size(); ++i)
      os << (i ? ", %" : "%") << graph.outputs[i];
    os << "\n";
  }
  os << "}\n";
}

std::string printGraph(const Graph &graph) {
  std::ostringstream os;
  printGraph(graph, os);
  return os.str();
}

} // namespace mpc::ir
