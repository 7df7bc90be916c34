//===- passes/TestPasses.cpp - hidden passes for testing the pass manager -===//
//
// Registered only with --enable-test-passes. `test-break-ssa` corrupts the
// stored type of the first op node so that a lit test can see the verifier
// catch it and name this pass as the culprit.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

namespace mpc::passes {
namespace {

class TestBreakSsaPass : public Pass {
public:
  bool run(ir::Graph &graph, PassContext &) override {
    for (const auto &n : graph.nodes()) {
      if (!n->isOp()) continue;
      n->type.shape.push_back(7);
      return true;
    }
    return false;
  }
};

} // namespace

std::unique_ptr<Pass> createTestBreakSsaPass() { return std::make_unique<TestBreakSsaPass>(); }

} // namespace mpc::passes
