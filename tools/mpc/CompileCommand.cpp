//===- tools/mpc/CompileCommand.cpp - `mpc compile`: model -> plan.bin ---===//
//
// Runs the compiler (compiler/Compile.h): the default training pipeline
// (passes/Pipelines.cpp) or --passes, then lowers the graph to an execution
// plan and writes plan.bin. With --emit=ir or --emit=json it writes the IR
// instead. Output files are written atomically: a failing compile leaves no
// file behind.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"
#include "ir/JsonWriter.h"
#include "ir/Printer.h"
#include "plan/PlanIO.h"
#include "support/FileIO.h"
#include "tools/mpc/BuryPointer.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/CommonOptions.h"
#include "tools/mpc/NumericFlags.h"

#include <iostream>
#include <memory>

namespace mpc::tool {

namespace {
struct CompileArgs {
  std::string model, output, emit = "plan";
  uint64_t seed = 0;
  bool noInPlace = false;
  CommonOptions common;
};
} // namespace

void addCompileCommand(CLI::App &app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App *cmd = app.add_subcommand(
      "compile", "Compile a model into an execution plan (plan.bin) for training or inference");
  cmd->add_option("model", args->model, "Model file (JSON)")->required();
  cmd->add_option("-o,--output", args->output, "Output file (plan.bin, or IR with --emit)")
      ->required();
  cmd->add_option("--emit", args->emit,
                  "What to write: plan (default), ir (text form) or json (the IR as JSON)")
      ->check(CLI::IsMember({"plan", "ir", "json"}));
  cmd->add_option("--seed", args->seed, "Seed for the initial parameter values (default 0)")
      ->check(unsignedInteger());
  cmd->add_flag("--no-inplace", args->noInPlace,
                "Give every arena buffer bytes of its own: no elementwise result takes over "
                "its dying operand's slot");
  args->common.addTo(*cmd);
  cmd->callback([args] {
    compiler::CompileOptions options =
        args->common.compileOptions(compiler::DefaultPipeline::Training);
    options.lower = codegen::LowerOptions{args->seed, !args->noInPlace};
    auto graph = runPasses(args->model, options);
    if (args->emit == "ir") {
      writeFileAtomic(args->output, ir::printGraph(*graph));
      return;
    }
    if (args->emit == "json") {
      writeFileAtomic(args->output, ir::writeModelJson(*graph));
      return;
    }
    auto p = std::make_unique<plan::Plan>(compiler::lower(*graph, options));
    if (args->common.stats) {
      codegen::printPlanStats(*p, std::cerr);
      codegen::printPipelineStats(*graph, *p, std::cerr);
    }
    plan::writePlanFile(args->output, *p);
    // The process ends here: leave the memory to the operating system.
    buryPointer(std::move(graph));
    buryPointer(std::move(p));
  });
}

} // namespace mpc::tool
