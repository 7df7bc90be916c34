//===- passes/PassRegistry.h - passes by name ---------------------------===//
#pragma once

#include "passes/Pass.h"

namespace mpc::passes {

#define MPC_PASS(Name, Create, Summary) std::unique_ptr<Pass> Create();
#define MPC_TEST_PASS(Name, Create, Summary) std::unique_ptr<Pass> Create();
#include "passes/PassRegistry.def"

struct PassEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Pass> (*create)();
  bool testOnly;
};

/// Every registered pass in PassRegistry.def order.
const std::vector<PassEntry> &allPasses();
/// Creates the pass `name`; throws UserError listing the known passes (and a
/// nearest-name suggestion) when there is none. Test passes are found only
/// when `enableTestPasses`.
std::unique_ptr<Pass> createPass(std::string_view name, bool enableTestPasses = false);

} // namespace mpc::passes
