//===- runtime/KernelRegistry.cpp - diagnostics for missing kernels -----===//
//
// The registry itself is a header-only template; this file holds the one
// message every backend uses when a plan names an op it has no kernel for,
// with a nearest-name suggestion (edit distance) to catch typos.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelRegistry.h"

#include "support/StringUtil.h"

namespace mpc::runtime {

std::string missingKernelMessage(const std::string &op, const std::string &backend,
                                 const std::vector<std::string> &known) {
  std::string msg = "no " + backend + " kernel for op '" + op + "'";
  if (std::string hint = didYouMean(op, known); !hint.empty()) msg += " (" + hint + ")";
  return msg;
}

} // namespace mpc::runtime
