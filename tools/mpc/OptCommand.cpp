//===- tools/mpc/OptCommand.cpp - `mpc opt`: run passes, print the IR ----===//
//
// The debugging entry point and what the lit tests drive: reads a model,
// runs the passes named by --passes (none by default: the reader already
// infers shapes), and prints the resulting IR to stdout (or -o FILE) in the
// text form, as JSON with --emit=json, or as a Graphviz picture with
// --emit=dot (ir/DotWriter.h). An output file is checked before
// the model is read, as `mpc compile`'s.
//
//===----------------------------------------------------------------------===//
#include "ir/DotWriter.h"
#include "ir/JsonWriter.h"
#include "ir/Printer.h"
#include "support/FileIO.h"
#include "support/Error.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/CommonOptions.h"

#include <iostream>
#include <memory>

namespace mpc::tool {

namespace {
struct OptArgs {
  std::string model, output, emit = "text";
  CommonOptions common;
};
} // namespace

void addOptCommand(CLI::App &app) {
  auto args = std::make_shared<OptArgs>();
  CLI::App *cmd = app.add_subcommand("opt", "Run passes on a model and print the resulting IR");
  cmd->add_option("model", args->model, "Model file (JSON)")->required();
  CLI::Option *output = cmd->add_option(
      "-o,--output", args->output,
      "Write the IR here instead of stdout (atomically, through a symbolic link, never over "
      "the model)");
  cmd->add_option("--emit", args->emit,
                  "Output form: text (default), json, or dot (a Graphviz picture: dot -Tsvg)")
      ->check(CLI::IsMember({"text", "json", "dot"}));
  args->common.addTo(*cmd);
  cmd->callback([args, output] {
    if (args->common.microbatchesAuto)
      throw UserError("", "--microbatches",
                      "auto is chosen by mpc compile, which compiles each candidate; give mpc opt "
                      "a number");
    compiler::CompileOptions options =
        args->common.compileOptions(compiler::DefaultPipeline::None);
    std::vector<OutputTarget> targets = args->common.outputTargets();
    // -o "" is refused, not taken for stdout.
    if (output->count() > 0) targets.push_back({"-o", args->output});
    checkOutputTargets(targets, {args->model});
    auto graph = runPasses(args->model, options);
    std::string out = args->emit == "json"  ? ir::writeModelJson(*graph)
                      : args->emit == "dot" ? ir::writeDot(*graph)
                                            : ir::printGraph(*graph);
    if (args->output.empty()) std::cout << out << std::flush;
    else writeFileAtomic(args->output, out);
  });
}

} // namespace mpc::tool
