//===- passes/VerifyPass.cpp - the `verify` pass ------------------------===//
//
// Runs the verifier as a pass (useful in --passes lists and when the pass
// manager's own verification is off with --no-verify). A failure here is a
// problem with the input graph, so it is a user error.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "support/Error.h"

namespace mpc::passes {
namespace {

class VerifyPass : public Pass {
public:
  bool run(ir::Graph &graph, PassContext &) override {
    std::vector<std::string> problems = ir::verifyGraph(graph);
    if (problems.empty()) return false;
    std::string msg = "verification failed:";
    for (const std::string &p : problems) msg += "\n  " + p;
    throw UserError(graph.sourceFile, "", msg);
  }
};

} // namespace

std::unique_ptr<Pass> createVerifyPass() { return std::make_unique<VerifyPass>(); }

} // namespace mpc::passes
