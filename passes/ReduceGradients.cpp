//===- passes/ReduceGradients.cpp - gradients all-reduced across replicas -===//
//
// Invariant established: in a data-parallel graph (passes/DataParallel.cpp),
// every replica's update of a parameter uses the same gradient, the sum of
// the replicas' gradients made in replica order: an all_reduce over the
// replicas' gradient values (ops/Collective.h), one member on each replica's
// parameter device. Each replica's gradient already carries the 1/(R·M) of a
// mean loss (passes/BatchSplit.cpp), so the sum is the full batch's gradient
// and the loss scale is applied once. Parameters and optimizer state then
// stay bit-identical across the replicas: the same updates of the same
// values.
//
// Algorithm:
//   1. Group the parameters: a replica's copy names its parameter in
//      Node::mirrorOf; the copies follow in replica order (creation order).
//   2. For each parameter with a gradient, in creation order, create the
//      all_reduce member `<gradient>.allreduce` on each replica's parameter
//      device, over the replicas' gradients in replica order, and make it
//      that replica's gradient (Graph::gradients).
// Running it again, or on a graph without replicas, changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <map>

namespace mpc::passes {

namespace {

class ReduceGradientsPass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    if (g.dataParallel.replicas <= 1) return false;
    if (!g.has(ir::kDifferentiated))
      throw UserError(g.sourceFile, "--data-parallel",
                      "reduce-gradients needs gradients: run 'autodiff' first");
    // Step 1.
    std::vector<ir::Node *> params;
    std::map<std::string, std::vector<ir::Node *>> copies;
    for (const auto &n : g.nodes()) {
      if (n->kind != ir::NodeKind::Param) continue;
      if (n->mirrorOf.empty()) params.push_back(n.get());
      else copies[n->mirrorOf].push_back(n.get());
    }
    // Step 2.
    bool changed = false;
    for (ir::Node *p : params) {
      auto it = copies.find(p->name);
      if (it == copies.end() || !g.gradients.count(p->name)) continue;
      std::vector<ir::Node *> replicas{p};
      replicas.insert(replicas.end(), it->second.begin(), it->second.end());
      std::vector<ir::Node *> grads;
      for (ir::Node *r : replicas) {
        if (!g.gradients.count(r->name))
          throw InternalError("replica '" + r->name + "' of '" + p->name + "' has no gradient");
        ir::Node *grad = g.find(g.gradients.at(r->name));
        MPC_ASSERT(grad, "gradient of '" + r->name + "' is not in the graph");
        if (grad->isOp(ir::OpKind::AllReduce)) return changed; // reduced already
        grads.push_back(grad);
      }
      for (size_t r = 0; r < replicas.size(); ++r) {
        ir::Builder b(g);
        b.device = replicas[r]->device;
        b.backward = true;
        b.origin = grads[r]->origin;
        ir::Node *sum = b.create(ir::OpKind::AllReduce, grads, {}, grads[r]->name + ".allreduce");
        g.gradients.set(replicas[r]->name, sum->name);
      }
      ctx.count("reduce-gradients", "all-reduces", 1);
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createReduceGradientsPass() {
  return std::make_unique<ReduceGradientsPass>();
}

} // namespace mpc::passes
