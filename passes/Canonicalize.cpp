//===- passes/Canonicalize.cpp - the `canonicalize` pass ----------------===//
//
// Invariant established: no op node is dead, no reshape or transpose is the
// identity, and a graph without a loss (inference) draws no dropout mask.
//
// Algorithm (to a fixed point):
//   1. fold `reshape` to its operand's own shape, `transpose` by the
//      identity permutation and, in a graph without a loss, `dropout` (the
//      identity at inference): their users use the operand directly; in
//      such a graph, an op's own dropout (attention's dropout_p) is set to 0;
//   2. erase op nodes whose value nobody uses, unless the node is the loss,
//      an output, a parameter's gradient (Graph::gradients, in a compiled
//      graph read back), or has side effects (optimizer updates), walking in reverse
//      topological order so chains of dead nodes go in one sweep.
// Leaves (inputs, params, state) are kept: they are part of the model's
// interface even when unused.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace mpc::passes {
namespace {

bool isIdentityFold(const ir::Graph &g, const ir::Node &n) {
  if (n.isOp(ir::OpKind::Reshape)) return n.inputs[0]->type == n.type;
  if (n.isOp(ir::OpKind::Dropout)) return g.loss.empty();
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
  bool run(ir::Graph &graph, PassContext &ctx) override {
    bool changed = false;
    std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
    // A compiled graph read back names its gradients: they stay too.
    for (const auto &[param, grad] : graph.gradients) outputs.insert(grad);
    // Users come after their operands in topological order, so a folded
    // node's users are rewired when they are reached (one walk, instead of a
    // scan of the graph per fold).
    std::unordered_map<const ir::Node *, ir::Node *> foldedInto;
    for (ir::Node *n : graph.topoOrder()) {
      for (ir::Node *&in : n->inputs)
        if (auto f = foldedInto.find(in); f != foldedInto.end()) in = f->second;
      // Inference draws no dropout: an op's own (attention's dropout_p) is
      // turned off, a dropout op folds below.
      if (n->isOp() && graph.loss.empty() && !n->isOp(ir::OpKind::Dropout) &&
          n->info().drawsMask(n->attrs)) {
        n->attrs[n->info().mask.probability] = 0.0;
        ctx.count(name(), "dropout-off");
        changed = true;
      }
      if (!n->isOp() || !isIdentityFold(graph, *n)) continue;
      // Keep the name of a node the user asked for (loss/output) alive, and
      // a gradient's.
      if (n->name == graph.loss || outputs.count(n->name)) continue;
      foldedInto[n] = n->inputs[0];
      ctx.count(name(), "identities-folded");
      changed = true;
    }
    // Dead nodes, users before operands: a node is dead when it has no users
    // left once its dead users are gone.
    std::vector<ir::Node *> order = graph.topoOrder();
    std::unordered_map<const ir::Node *, size_t> users;
    for (const auto &[n, us] : graph.userMap()) users[n] = us.size();
    std::unordered_set<const ir::Node *> dead;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      ir::Node *n = *it;
      if (!n->isOp() || users[n] > 0 || n->name == graph.loss ||
          n->info().has(ir::kOptimizer) || n->info().has(ir::kCollective) || outputs.count(n->name))
        continue;
      dead.insert(n);
      for (size_t i = 0; i < n->inputs.size(); ++i)
        if (std::find(n->inputs.begin(), n->inputs.begin() + long(i), n->inputs[i]) ==
            n->inputs.begin() + long(i))
          --users[n->inputs[i]];
      ctx.count(name(), "dead-nodes-removed");
      changed = true;
    }
    graph.eraseAll(dead);
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }

} // namespace mpc::passes
