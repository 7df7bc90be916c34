//===- passes/PassManager.cpp - runs a pipeline of named passes ---------===//
//
// Observability lives here, not in passes: IR dumps before/after passes,
// timing (the verifier is timed as its own line), and verification before
// the first pass and after every pass that reports a change (after every
// pass in MPC_EXPENSIVE_CHECKS builds). A verifier failure after a pass is an
// internal error naming the pass; the graph as it was before that pass is
// written to the reproducer file when one is set, so
// `mpc opt REPRO.json --passes=NAME` replays the failure.
//
//===----------------------------------------------------------------------===//
#include "passes/PassManager.h"

#include "ir/JsonWriter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassRegistry.h"
#include "support/Error.h"
#include "support/FileIO.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace mpc::passes {

PassManager::PassManager(PassContext &ctx, Instrumentation instr)
    : ctx_(ctx), instr_(std::move(instr)) {
  if (!instr_.dump) instr_.dump = &std::cerr;
  if (!ctx_.log) ctx_.log = &std::cerr;
}

void PassManager::add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }

void PassManager::addPipeline(const std::string &pipeline, bool enableTestPasses) {
  std::stringstream ss(pipeline);
  std::string name;
  while (std::getline(ss, name, ',')) {
    // Trim blanks so "a, b" works.
    size_t b = name.find_first_not_of(" \t"), e = name.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    add(createPass(name.substr(b, e - b + 1), enableTestPasses));
  }
}

std::string PassManager::pipelineString() const {
  std::string s;
  for (const auto &p : passes_) s += (s.empty() ? "" : ",") + std::string(p->name());
  return s;
}

namespace {
using Clock = std::chrono::steady_clock;

struct Timing {
  std::string name;
  double seconds = 0;
};

void verifyOrThrow(const ir::Graph &graph, const std::string &after,
                   const std::string &reproducer, const std::string &before) {
  std::vector<std::string> problems = ir::verifyGraph(graph);
  if (problems.empty()) return;
  std::string msg = after.empty() ? "verifier failed on the input graph"
                                  : "verifier failed after pass '" + after + "'";
  for (const std::string &p : problems) msg += "\n  " + p;
  if (!reproducer.empty() && !before.empty()) {
    writeFileAtomic(reproducer, before);
    msg += "\nnote: the graph before the pass was written to " + reproducer +
           "; replay with: mpc opt " + reproducer + " --passes=" + after;
  }
  if (after.empty()) throw UserError(graph.sourceFile, "", msg);
  throw InternalError(msg);
}
} // namespace

void PassManager::run(ir::Graph &graph) {
  std::vector<Timing> timings;
  auto timed = [&](const std::string &label, auto &&fn) {
    auto t0 = Clock::now();
    fn();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    for (Timing &t : timings)
      if (t.name == label) {
        t.seconds += s;
        return;
      }
    timings.push_back({label, s});
  };
  std::ostream &dump = *instr_.dump;

  if (instr_.verify) timed("(verifier)", [&] { verifyOrThrow(graph, "", "", ""); });

  for (const auto &pass : passes_) {
    std::string name(pass->name());
    if (instr_.printBeforeAll || instr_.printBefore.count(name)) {
      dump << "*** IR Dump Before " << name << " ***\n";
      ir::printGraph(graph, dump);
    }
    // Kept only when a reproducer is requested: serialising costs time.
    std::string before = instr_.reproducer.empty() ? "" : ir::writeModelJson(graph);
    bool changed = false;
    timed(name, [&] { changed = pass->run(graph, ctx_); });
#ifdef MPC_EXPENSIVE_CHECKS
    changed = true;
#endif
    if (instr_.verify && changed)
      timed("(verifier)", [&] { verifyOrThrow(graph, name, instr_.reproducer, before); });
    if (instr_.printAfterAll || instr_.printAfter.count(name)) {
      dump << "*** IR Dump After " << name << " ***\n";
      ir::printGraph(graph, dump);
    }
  }

  if (instr_.timePasses) {
    double total = 0;
    for (const Timing &t : timings) total += t.seconds;
    dump << "===-------------------------------------------------------------------===\n"
         << "                      ... Pass execution timing report ...\n"
         << "===-------------------------------------------------------------------===\n";
    char line[160];
    std::snprintf(line, sizeof line, "  Total Execution Time: %.4f seconds\n\n", total);
    dump << line << "   ---Wall Time---  --- Name ---\n";
    for (const Timing &t : timings) {
      std::snprintf(line, sizeof line, "   %.4f (%5.1f%%)  %s\n", t.seconds,
                    total > 0 ? 100.0 * t.seconds / total : 0.0, t.name.c_str());
      dump << line;
    }
    std::snprintf(line, sizeof line, "   %.4f (100.0%%)  Total\n", total);
    dump << line;
  }
}

} // namespace mpc::passes
