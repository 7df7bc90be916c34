//===- compiler/Compile.h - model to training graph to plan -------------===//
//
// The compiler as a library, and the only way mpc compiles: `mpc compile`,
// `mpc opt`, the tests and the benchmarks all call these functions. A
// compile is three steps, each its own function so that callers can stop
// or look in between:
//   1. read the model (ir/JsonReader.h), or take a graph already built;
//   2. runPasses: the pass pipeline (--passes, or the default training
//      pipeline of passes/Pipelines.cpp) under the pass manager, with the
//      verifier and the --print/--time instrumentation;
//   3. lower: the training graph to a plan (codegen/Lower.h).
// Failures throw, as everywhere (UserError for the model or the options,
// InternalError for a broken invariant).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Lower.h"
#include "ir/Graph.h"
#include "passes/PassManager.h"
#include "plan/Plan.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mpc::compiler {

/// Which passes run when CompileOptions::pipeline is empty.
enum class DefaultPipeline {
  Training, ///< passes::defaultPipeline: what `mpc compile` runs
  None,     ///< no pass: what `mpc opt` runs (the reader already inferred shapes)
};

/// Everything a compile takes besides the model.
struct CompileOptions {
  passes::PassOptions passes;              ///< placement, devices, optimizer, pipeline
  passes::Instrumentation instrumentation; ///< --print-*, verifier, --time-passes, reproducer
  std::string pipeline;                    ///< "a,b,c" (--passes); empty: `fallback`
  DefaultPipeline fallback = DefaultPipeline::Training;
  bool enableTestPasses = false;
  /// Pass notes, warnings, IR dumps and timings; null: discarded (tests,
  /// benchmarks). Also instrumentation.dump's stream when that is unset.
  std::ostream *log = nullptr;
  codegen::LowerOptions lower; ///< seed, in-place reuse
};

/// Runs the pipeline the options name on `graph`, in place; returns the
/// statistics the passes counted (printed by `--stats`).
std::vector<passes::PassStatistic> runPasses(ir::Graph &graph, const CompileOptions &options);

/// Lowers a training graph that runPasses produced to a plan.
plan::Plan lower(const ir::Graph &graph, const CompileOptions &options);

/// Steps 1 and 2 on model JSON text (`file` names it in messages).
std::unique_ptr<ir::Graph> compileGraph(const std::string &json, const CompileOptions &options,
                                        const std::string &file = "model.json");
/// Steps 1 to 3 on model JSON text.
plan::Plan compileModel(const std::string &json, const CompileOptions &options,
                        const std::string &file = "model.json");

/// The shorthand of tests and benchmarks: the default training pipeline
/// with `options`, quiet, initial values drawn with `seed`.
std::unique_ptr<ir::Graph> compileGraph(const std::string &json, passes::PassOptions options = {});
plan::Plan compileModel(const std::string &json, passes::PassOptions options = {},
                        uint64_t seed = 0);

/// A compiled model: the training graph, its plan, and the statistics its
/// passes counted.
struct Compiled {
  std::unique_ptr<ir::Graph> graph;
  plan::Plan plan;
  std::vector<passes::PassStatistic> statistics;
};

/// `mpc compile --activation-budget`: compiles a copy of `model` with
/// recomputation raised greedily, device by device (none, then selective,
/// then full, from --recompute's level), until every device's arena peak
/// is at most `budget` bytes. The levels chosen are left in
/// options.passes.recomputeOn. Throws UserError naming the device, what it
/// needs and the budget when full recomputation does not fit.
Compiled compileWithinActivationBudget(const ir::Graph &model, CompileOptions &options,
                                       uint64_t budget);

/// `mpc compile --microbatches=auto`: each M that divides a replica's rows,
/// up to 64, compiled (quietly) from a copy of `model`, with the step the
/// cost model predicts for it (codegen::predictPipelineCost); `best` is the
/// shortest (the smaller M on a tie). M values the model refuses (an error
/// for that M) are left out; when all are, the first error is thrown.
struct MicrobatchChoice {
  int64_t best = 1;
  std::vector<std::pair<int64_t, double>> predicted; ///< (M, seconds per step)
};
MicrobatchChoice chooseMicrobatches(const ir::Graph &model, const CompileOptions &options);

/// `mpc compile --stats` after the passes' counters: the plan's statistics
/// (codegen/Lower.h: memory, pipeline bubble, collectives' hidden share),
/// each device's recomputation level chosen for `budgetText`
/// (--activation-budget, from options.passes.recomputeOn), and, when any
/// device recomputes, each device's arena peak with and without: `model`
/// compiled again, quietly, with the same options but no recomputation.
void printCompileStatistics(const ir::Graph &model, const plan::Plan &plan,
                            const CompileOptions &options, const std::string &budgetText,
                            std::ostream &os);

/// "pass: name = value", one line per statistic, as `--stats` prints them.
void printPassStatistics(const std::vector<passes::PassStatistic> &statistics, std::ostream &os);

} // namespace mpc::compiler
