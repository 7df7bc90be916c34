//===- compiler/Evaluate.cpp - the reference interpreter on a model's data -===//
#include "compiler/Evaluate.h"

#include "ir/Interpreter.h"
#include "support/Error.h"
#include "support/StringUtil.h"

namespace mpc::compiler {

Evaluation evaluate(const ir::Graph &graph, const std::map<std::string, Dataset> &data,
                    const std::vector<std::string> &wanted, uint64_t seed) {
  std::vector<std::string> inputNames;
  for (const auto &n : graph.nodes())
    if (n->kind == ir::NodeKind::Input) inputNames.push_back(n->name);
  for (const auto &[name, set] : data) {
    const ir::Node *n = graph.find(name);
    if (!n || n->kind != ir::NodeKind::Input)
      throw UserError(set.file, "--input",
                      "the graph has no input '" + name + "' (its inputs: " +
                          (inputNames.empty() ? std::string("none") : joinText(inputNames)) + ")");
  }
  for (const std::string &w : wanted)
    if (!graph.find(w))
      throw UserError(graph.sourceFile, "--output", "'" + w + "' is not a value of the graph");
  // The first batch of each input: rows [0, B).
  std::map<std::string, ir::RefTensor> batch;
  for (const auto &n : graph.nodes()) {
    if (n->kind != ir::NodeKind::Input) continue;
    auto it = data.find(n->name);
    if (it == data.end())
      throw UserError(graph.sourceFile, "--input",
                      "no dataset for input '" + n->name + "' " + n->type.str() +
                          " (give --input " + n->name + "=FILE.npy)");
    const ir::RefTensor &all = it->second.values;
    const ir::Shape &want = n->type.shape;
    bool fits = !want.empty() && all.shape.size() == want.size() && all.shape[0] >= want[0];
    for (size_t d = 1; fits && d < want.size(); ++d) fits = all.shape[d] == want[d];
    if (want.empty()) fits = all.shape.empty();
    if (!fits)
      throw UserError(it->second.file, "--input " + n->name,
                      "dataset " + shapeText(all.shape) + " does not hold a batch of input '" +
                          n->name + "' " + n->type.str() +
                          " (the same shape with at least as many rows)");
    ir::RefTensor rows(want);
    std::copy(all.data.begin(), all.data.begin() + long(rows.data.size()), rows.data.begin());
    batch.emplace(n->name, std::move(rows));
  }
  ir::Interpreter interp(graph, seed);
  std::map<std::string, ir::RefTensor> values = interp.step(batch);
  Evaluation out;
  if (!graph.loss.empty()) out.loss = values.at(graph.loss).data.at(0);
  for (const std::string &w : wanted) out.values[w] = values.at(w);
  return out;
}

} // namespace mpc::compiler
