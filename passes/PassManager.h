//===- passes/PassManager.h - runs a pipeline of named passes -----------===//
//
// Runs passes in order with instrumentation: --print-before/--print-after
// (text dumps to the dump stream under "*** IR Dump After NAME ***"),
// --time-passes (the verifier gets its own line), and the verifier before the
// first pass and after every pass that changed the graph, unless disabled.
// A verifier failure after a pass throws InternalError:
//   verifier failed after pass 'insert-copies'
// followed by the violations, and writes a reproducer (the graph as JSON
// before that pass) when a reproducer path is set.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace mpc::passes {

struct Instrumentation {
  std::set<std::string> printBefore, printAfter;
  bool printBeforeAll = false, printAfterAll = false;
  bool verify = true;
  bool timePasses = false;
  std::string reproducer; ///< file for the graph before a failing pass
  std::ostream *dump = nullptr; ///< dumps and timings (stderr by default)
};

class PassManager {
public:
  PassManager(PassContext &ctx, Instrumentation instr);
  void add(std::unique_ptr<Pass> pass);
  /// Parses "a,b,c" into passes (throws UserError on unknown names).
  void addPipeline(const std::string &pipeline, bool enableTestPasses = false);
  /// Runs all passes; throws UserError from passes and InternalError from
  /// the verifier.
  void run(ir::Graph &graph);
  /// "a,b,c" of the passes added.
  std::string pipelineString() const;

private:
  PassContext &ctx_;
  Instrumentation instr_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// The default training pipeline used by `mpc compile` (passes/Pipelines.cpp):
/// infer-shapes, canonicalize, place, [microbatch,] insert-copies, autodiff,
/// insert-copies, optimize-step; without a loss it stops after the copies.
/// `microbatch` runs when the effective micro-batch count exceeds 1.
std::string defaultPipeline(const ir::Graph &graph, const PassOptions &options = {});

} // namespace mpc::passes
