//===- passes/BatchNormStats.cpp - batch_norm's running statistics ------===//
//
// Invariant established: every batch_norm node has its running mean and
// variance as state tensors f32[C] on its device, named by its
// `running_mean` / `running_var` attributes (default `<node>.running_mean`,
// `<node>.running_var`), initialised to 0 and 1 and kept with gamma (their
// `param`). In a graph with a loss (training) and without use_global_stats,
// batch_norm keeps its three operands (it normalises with the batch's
// statistics) and `<node>.stats_update` = batch_norm_update(running_mean,
// running_var, x) folds the batch statistics into the running ones in
// place, once per step after every reader. Otherwise (no loss: inference; or
// use_global_stats) the running statistics become batch_norm's operands 4
// and 5, and nothing updates them.
//
// The statistics are state, not optimizer state: they exist in inference
// plans too, so that a checkpoint's running statistics load into them
// (docs/runtime.md).
//
// Algorithm:
//   1. For each batch_norm node with three operands, in creation order,
//      that has no update yet (the pass is idempotent): its state names.
//   2. The two states on the node's device (the pass runs after `place` in
//      the default pipeline, so that device is concrete): created, or
//      reused when a state of that name and type exists (nodes sharing
//      statistics); a name taken by anything else is a user error naming
//      the attribute. Then either the update (training) or the extra
//      operands.
// It runs before `microbatch`, so that each micro-batch's replica of the
// update folds in its own statistics, in micro-batch order (GPipe's
// semantics, docs/pipelining.md).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <set>

namespace mpc::passes {

using ir::Graph;
using ir::Node;

namespace {

/// The state name an attribute gives, or `<node>.<slot>` when it is empty.
std::string stateName(const Node &n, const char *attr) {
  const std::string &name = ir::getString(n.attrs, attr);
  return name.empty() ? n.name + "." + attr : name;
}

/// The param the statistics are kept with: gamma, else beta.
const Node *ownerParam(const Graph &g, const Node &n) {
  for (size_t i : {size_t(1), size_t(2)})
    if (n.inputs[i]->kind == ir::NodeKind::Param) return n.inputs[i];
  throw UserError(g.sourceFile, n.where(),
                  n.describe() + " needs gamma or beta to be a param: its running statistics "
                                 "are state kept with it (got '" +
                      n.inputs[1]->name + "' and '" + n.inputs[2]->name + "')");
}

class BatchNormStatsPass : public Pass {
public:

  bool run(Graph &g, PassContext &ctx) override {
    const bool training = !g.loss.empty();
    std::vector<Node *> nodes;
    for (const auto &n : g.nodes())
      if (n->isOp(ir::OpKind::BatchNorm) && n->inputs.size() == 3) nodes.push_back(n.get());
    // Nodes an earlier run gave their update (the pass is idempotent).
    std::set<std::string> updated;
    for (const auto &n : g.nodes())
      if (n->isOp(ir::OpKind::BatchNormUpdate)) updated.insert(n->origin);
    bool changed = false;
    for (Node *n : nodes) {
      const bool update = training && !ir::getBool(n->attrs, "use_global_stats");
      if (update && updated.count(n->name)) continue;
      std::string meanName = stateName(*n, "running_mean");
      std::string varName = stateName(*n, "running_var");
      if (meanName == varName)
        throw UserError(g.sourceFile, n->where(),
                        n->describe() + " names one tensor '" + meanName +
                            "' for both running_mean and running_var");
      const Node *x = n->inputs[0];
      int64_t axis = *ir::normalizeAxis(ir::getInt(n->attrs, "axis"), x->type.rank());
      ir::TensorType vec{ir::DType::F32, {x->type.shape[size_t(axis)]}};
      // A state of that name is reused (two batch_norm nodes may share their
      // statistics, as MXNet's aux states can be shared); anything else with
      // the name is an error.
      auto stateFor = [&](const std::string &name, const char *attr, ir::InitSpec::Kind init) {
        if (Node *taken = g.find(name)) {
          if (taken->kind != ir::NodeKind::State || taken->type != vec)
            throw UserError(g.sourceFile, n->where(),
                            n->describe() + " " + attr + " '" + name +
                                "' is already the name of " + taken->describe() + " " +
                                taken->type.str() + " (expected state " + vec.str() + ")");
          return taken;
        }
        Node *st = g.addState(name, vec, ir::InitSpec{init}, ownerParam(g, *n)->name);
        st->device = n->device;
        ctx.count("batch-norm-stats", "state-tensors");
        return st;
      };
      Node *mean = stateFor(meanName, "running_mean", ir::InitSpec::Zeros);
      Node *var = stateFor(varName, "running_var", ir::InitSpec::Ones);
      if (update) {
        ir::Builder b(g);
        b.device = mean->device; // with the state it updates, as optimizer updates are
        b.origin = n->name;
        b.create(ir::OpKind::BatchNormUpdate, {mean, var, n->inputs[0]},
                 {{"momentum", ir::getFloat(n->attrs, "momentum")},
                  {"axis", ir::getInt(n->attrs, "axis")}},
                 g.uniqueName(n->name + ".stats_update"));
        ctx.count("batch-norm-stats", "updates");
      } else {
        n->inputs.push_back(mean);
        n->inputs.push_back(var);
        ctx.count("batch-norm-stats", "running-operands");
      }
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createBatchNormStatsPass() {
  return std::make_unique<BatchNormStatsPass>();
}

} // namespace mpc::passes
