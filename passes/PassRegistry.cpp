//===- passes/PassRegistry.cpp - passes by name -------------------------===//
//
// The registry is the expansion of PassRegistry.def: explicit, no static
// constructors. Unknown names get an error listing the known passes and, when
// one is close, a suggestion.
//
//===----------------------------------------------------------------------===//
#include "passes/PassRegistry.h"

#include "support/Error.h"
#include "support/StringUtil.h"


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

std::unique_ptr<Pass> createPass(std::string_view name, bool enableTestPasses) {
  std::vector<std::string> known;
  for (const PassEntry &e : allPasses()) {
    if (e.testOnly && !enableTestPasses) continue;
    if (e.name == name) {
      std::unique_ptr<Pass> pass = e.create();
      pass->name_ = e.name;
      pass->summary_ = e.summary;
      return pass;
    }
    known.emplace_back(e.name);
  }
  std::string msg = "unknown pass '" + std::string(name) + "'";
  if (std::string hint = didYouMean(name, known); !hint.empty()) msg += "; " + hint;
  std::string list;
  for (const std::string &k : known) list += (list.empty() ? "" : ", ") + k;
  throw UserError(msg + " (known passes: " + list + ")");
}

} // namespace mpc::passes
