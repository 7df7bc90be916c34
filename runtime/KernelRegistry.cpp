//===- runtime/KernelRegistry.cpp - diagnostics for missing kernels -----===//
//
// The registry itself is a header-only template; this file holds the one
// message every backend uses when a plan names an op it has no kernel for,
// with a nearest-name suggestion (edit distance) to catch typos.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelRegistry.h"

#include <algorithm>

namespace mpc::runtime {

namespace {

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

} // namespace

std::string missingKernelMessage(const std::string &op, const std::string &backend,
                                 const std::vector<std::string> &known) {
  std::string msg = "no " + backend + " kernel for op '" + op + "'";
  const std::string *best = nullptr;
  size_t bestDist = 3; // suggest only close names
  for (const std::string &name : known) {
    size_t d = editDistance(op, name);
    if (d < bestDist) bestDist = d, best = &name;
  }
  if (best) msg += " (did you mean '" + *best + "'?)";
  return msg;
}

} // namespace mpc::runtime
