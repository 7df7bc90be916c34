//===- passes/PassRegistry.cpp - passes by name -------------------------===//
//
// The registry is the expansion of PassRegistry.def: explicit, no static
// constructors. Unknown names get an error listing the known passes and, when
// one is close, a suggestion.
//
//===----------------------------------------------------------------------===//
#include "passes/PassRegistry.h"

#include "support/Error.h"

#include <algorithm>

namespace mpc::passes {

void PassContext::count(std::string_view pass, std::string_view name, int64_t delta) {
  for (PassStatistic &s : statistics)
    if (s.pass == pass && s.name == name) {
      s.value += delta;
      return;
    }
  statistics.push_back({std::string(pass), std::string(name), delta});
}

const std::vector<PassEntry> &allPasses() {
  static const std::vector<PassEntry> entries = {
#define MPC_PASS(Name, Create, Summary) {Name, Summary, &Create, false},
#define MPC_TEST_PASS(Name, Create, Summary) {Name, Summary, &Create, true},
#include "passes/PassRegistry.def"
  };
  return entries;
}

static size_t editDistance(std::string_view a, std::string_view b) {
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

std::unique_ptr<Pass> createPass(std::string_view name, bool enableTestPasses) {
  std::string known;
  std::string_view best;
  size_t bestDist = 3; // suggest only names within two edits
  for (const PassEntry &e : allPasses()) {
    if (e.testOnly && !enableTestPasses) continue;
    if (e.name == name) return e.create();
    known += (known.empty() ? "" : ", ") + std::string(e.name);
    size_t d = editDistance(name, e.name);
    if (d < bestDist) {
      bestDist = d;
      best = e.name;
    }
  }
  std::string msg = "unknown pass '" + std::string(name) + "'";
  if (!best.empty()) msg += "; did you mean '" + std::string(best) + "'?";
  msg += " (known passes: " + known + ")";
  throw UserError(msg);
}

} // namespace mpc::passes
