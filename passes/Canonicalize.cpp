//===- passes/Canonicalize.cpp - the `canonicalize` pass ----------------===//
//
// Invariant established: no op node is dead, and no reshape or transpose is
// the identity.
//
// Algorithm (to a fixed point):
//   1. fold `reshape` to its operand's own shape and `transpose` by the
//      identity permutation: their users use the operand directly;
//   2. erase op nodes whose value nobody uses, unless the node is the loss,
//      an output, or has side effects (optimizer updates), walking in reverse
//      topological order so chains of dead nodes go in one sweep.
// Leaves (inputs, params, state) are kept: they are part of the model's
// interface even when unused.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include <algorithm>
#include <set>

namespace mpc::passes {
namespace {

bool isIdentityFold(const ir::Node &n) {
  if (n.isOp(ir::OpKind::Reshape)) return n.inputs[0]->type == n.type;
  if (n.isOp(ir::OpKind::Transpose)) {
    const auto &perm = ir::getInts(n.attrs, "perm");
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i)) return false;
    // An empty perm reverses the axes: the identity only for rank <= 1.
    return !perm.empty() || n.type.rank() <= 1;
  }
  return false;
}

class CanonicalizePass : public Pass {
public:
  std::string_view name() const override { return "canonicalize"; }
  std::string_view summary() const override {
    return "remove dead nodes, fold identity reshapes and transposes";
  }
  bool run(ir::Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (ir::Node *n : graph.topoOrder()) {
      if (!n->isOp() || !isIdentityFold(*n)) continue;
      // Keep the name of a node the user asked for (loss/output) alive.
      if (n->name == graph.loss) continue;
      if (std::find(graph.outputs.begin(), graph.outputs.end(), n->name) != graph.outputs.end())
        continue;
      graph.replaceAllUses(n, n->inputs[0]);
      ctx.count(name(), "identities-folded");
      changed = true;
    }
    std::vector<ir::Node *> order = graph.topoOrder();
    std::set<const ir::Node *> used;
    for (const auto &n : graph.nodes())
      for (const ir::Node *in : n->inputs) used.insert(in);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      ir::Node *n = *it;
      if (!n->isOp() || used.count(n) || n->name == graph.loss ||
          n->info().has(ir::kOptimizer) ||
          std::find(graph.outputs.begin(), graph.outputs.end(), n->name) != graph.outputs.end())
        continue;
      std::vector<ir::Node *> operands = n->inputs;
      graph.erase(n);
      // Operands may have lost their last user; recompute for them.
      for (ir::Node *op : operands)
        if (graph.users(op).empty()) used.erase(op);
      ctx.count(name(), "dead-nodes-removed");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }

} // namespace mpc::passes
