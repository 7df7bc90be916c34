//===- passes/InferShapes.cpp - the `infer-shapes` pass -----------------===//
//
// Invariant established: every op node's stored type is the one its op's
// shape rule gives for its operands (GraphStage::kShaped).
//
// Algorithm:
//   1. walk the nodes in topological order (operands before users);
//   2. re-run the op's shape rule on the operands' (already updated) types;
//   3. store the result, counting the nodes whose type changed.
// A rule violation is a user error naming the node and its JSON pointer.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "passes/Pass.h"
#include "support/Error.h"

namespace mpc::passes {
namespace {

class InferShapesPass : public Pass {
public:
  bool run(ir::Graph &graph, PassContext &ctx) override {
    bool changed = false;
    for (ir::Node *n : graph.topoOrder()) {
      if (!n->isOp()) continue;
      ir::TensorType t;
      try {
        t = ir::inferNodeType(n->info(), n->inputs, n->attrs);
      } catch (const RuleError &e) {
        throw UserError(graph.sourceFile, n->jsonPath.empty() ? "node '" + n->name + "'" : n->jsonPath,
                        std::string(e.what()) + " in " + n->describe());
      }
      if (!(t == n->type)) {
        n->type = t;
        changed = true;
        ctx.count(name(), "types-changed");
      }
    }
    if (!graph.has(ir::kShaped)) {
      graph.stages |= ir::kShaped;
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createInferShapesPass() { return std::make_unique<InferShapesPass>(); }

} // namespace mpc::passes
