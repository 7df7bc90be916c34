//===- tools/mpc/CompileCommand.cpp - `mpc compile`: model -> plan.bin ---===//
//
// Runs the compiler (compiler/Compile.h): the default training pipeline
// (passes/Pipelines.cpp) or --passes, then lowers the graph to an execution
// plan and writes plan.bin. With --emit=ir, --emit=json or --emit=dot (a
// Graphviz picture) it writes the IR instead; --trace-predicted also writes
// the cost model's timeline of a step (plan/TraceEvents.h). The outputs are
// checked before the model is read (each a writable regular file, not the
// model) and written atomically: a failing compile leaves no file behind.
// The flags are in Flags.h.
//
//===----------------------------------------------------------------------===//
#include "ir/DotWriter.h"
#include "ir/JsonReader.h"
#include "ir/JsonWriter.h"
#include "ir/Printer.h"
#include "plan/PlanIO.h"
#include "plan/TraceEvents.h"
#include "support/FileIO.h"
#include "tools/mpc/BuryPointer.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/Flags.h"
#include "tools/mpc/NumericFlags.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace mpc::tool {

void addCompileCommand(CLI::App &app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App *cmd = addCompileFlags(app, *args);
  cmd->callback([args] {
    compiler::CompileOptions options = finishCompileFlags(*args);
    std::optional<uint64_t> budget;
    if (!args->activationBudget.empty())
      budget = uint64_t(parseByteSize(args->activationBudget, "--activation-budget"));
    if (!args->tracePredicted.empty() && args->emit != "plan")
      throw UserError("", "--trace-predicted",
                      "draws the plan's step, and --emit=" + args->emit +
                          " writes no plan: drop one of them");
    std::vector<OutputTarget> targets = {{"-o", args->output}};
    if (!args->tracePredicted.empty()) targets.push_back({"--trace-predicted", args->tracePredicted});
    for (const OutputTarget &t : args->common.outputTargets()) targets.push_back(t);
    checkOutputTargets(targets, {args->model});
    std::unique_ptr<ir::Graph> graph;
    std::unique_ptr<plan::Plan> p;
    if (args->common.microbatchesAuto) {
      compiler::MicrobatchChoice choice =
          compiler::chooseMicrobatches(*ir::readModelFile(args->model), options);
      options.passes.microbatches = choice.best;
      if (options.passes.stats) {
        std::cerr << "microbatches: auto chose " << choice.best
                  << ", the shortest step the cost model predicts:";
        for (const auto &[m, seconds] : choice.predicted) {
          char ms[32];
          std::snprintf(ms, sizeof ms, "%.3g ms", seconds * 1e3);
          std::cerr << " M=" << m << " " << ms;
        }
        std::cerr << "\n";
      }
    }
    if (budget) {
      compiler::Compiled c =
          compiler::compileWithinActivationBudget(*ir::readModelFile(args->model), options, *budget);
      if (options.passes.stats) compiler::printPassStatistics(c.statistics, std::cerr);
      graph = std::move(c.graph);
      p = std::make_unique<plan::Plan>(std::move(c.plan));
    } else {
      graph = runPasses(args->model, options);
    }
    if (args->emit == "ir") {
      writeFileAtomic(args->output, ir::printGraph(*graph));
      return;
    }
    if (args->emit == "json") {
      writeFileAtomic(args->output, ir::writeModelJson(*graph));
      return;
    }
    if (args->emit == "dot") {
      writeFileAtomic(args->output, ir::writeDot(*graph));
      return;
    }
    if (!p) p = std::make_unique<plan::Plan>(compiler::lower(*graph, options));
    if (args->common.stats)
      compiler::printCompileStatistics(*ir::readModelFile(args->model), *p, options,
                                       args->activationBudget, std::cerr);
    plan::writePlanFile(args->output, *p);
    if (!args->tracePredicted.empty())
      writeFileAtomic(args->tracePredicted, plan::predictedTraceEventJson(*p));
    // The process ends here: leave the memory to the operating system.
    buryPointer(std::move(graph));
    buryPointer(std::move(p));
  });
}

} // namespace mpc::tool
