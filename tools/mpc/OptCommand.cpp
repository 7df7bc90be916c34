//===- tools/mpc/OptCommand.cpp - `mpc opt`: run passes, print the IR ----===//
//
// The debugging entry point and what the lit tests drive: reads a model,
// runs the passes named by --passes (none by default: the reader already
// infers shapes), and prints the resulting IR to stdout (or -o FILE) in the
// text form, as JSON with --emit=json, or as a Graphviz picture with
// --emit=dot (ir/DotWriter.h). An output file is checked before
// the model is read, as `mpc compile`'s. With --eval it runs the reference
// interpreter on the graph instead (compiler/Evaluate.h): the loss of the
// first batch, and values written with --output.
//
//===----------------------------------------------------------------------===//
#include "compiler/Evaluate.h"
#include "io/Npy.h"
#include "ir/DotWriter.h"
#include "ir/JsonWriter.h"
#include "ir/Printer.h"
#include "plan/PlanFormat.h"
#include "runtime/train/Datasets.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "support/StringUtil.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/CommonOptions.h"

#include <bit>
#include <iostream>
#include <map>
#include <memory>

namespace mpc::tool {

namespace {
struct OptArgs {
  std::string model, output, emit = "text";
  bool eval = false;
  std::vector<std::string> inputs, outputs;
  uint64_t seed = 0;
  CommonOptions common;
};

/// --eval: the reference interpreter on the first batch of each --input
/// (compiler/Evaluate.h); prints the loss as `mpc run` prints its first,
/// writes each --output.
void evaluate(const ir::Graph &graph, const OptArgs &args) {
  std::map<std::string, compiler::Dataset> data;
  for (const std::string &spec : args.inputs) {
    auto [name, file] = runtime::train::splitSpec(spec, "--input");
    io::NpyArray a = io::readNpy(file);
    compiler::Dataset set{file, ir::RefTensor(a.shape)};
    for (size_t i = 0; i < set.values.data.size(); ++i) {
      uint32_t bits = uint32_t(plan::loadLE(&a.data[i * 4], 4));
      set.values.data[i] = a.dtype == plan::DType::F32 ? double(std::bit_cast<float>(bits))
                                                       : double(int32_t(bits));
    }
    if (!data.emplace(name, std::move(set)).second)
      throw UserError("", "--input", "input '" + name + "' given twice");
  }
  std::vector<std::pair<std::string, std::string>> outs;
  std::vector<std::string> wanted;
  for (const std::string &spec : args.outputs) {
    outs.push_back(runtime::train::splitSpec(spec, "--output"));
    wanted.push_back(outs.back().first);
  }
  compiler::Evaluation e = compiler::evaluate(graph, data, wanted, args.seed);
  if (e.loss) std::cout << "loss " << runtime::train::valueText(*e.loss) << "\n";
  for (const auto &[name, file] : outs) {
    const ir::RefTensor &v = e.values.at(name);
    const ir::DType dtype = graph.find(name)->type.dtype;
    std::vector<uint32_t> bits(v.data.size());
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = dtype == ir::DType::F32 ? std::bit_cast<uint32_t>(float(v.data[i]))
                                        : uint32_t(int32_t(v.data[i]));
    io::writeNpy(file, dtype, v.shape, bits.data());
    std::cout << "wrote " << name << " " << shapeText(v.shape) << " to " << file << "\n";
  }
  std::cout << std::flush;
}
} // namespace

void addOptCommand(CLI::App &app) {
  auto args = std::make_shared<OptArgs>();
  CLI::App *cmd = app.add_subcommand("opt", "Run passes on a model and print the resulting IR");
  cmd->add_option("model", args->model, "Model file (JSON)")->required();
  // One flag, two uses, as mpc run's --output: the IR's file, or with
  // --eval the values to write.
  CLI::Option *output = cmd->add_option(
      "-o,--output", args->outputs,
      "Write the IR here instead of stdout (atomically, through a symbolic link, never over "
      "the model); with --eval: NAME=FILE.npy, write the value NAME (any value of the graph), "
      "repeatable");
  cmd->add_option("--emit", args->emit,
                  "Output form: text (default), json, or dot (a Graphviz picture: dot -Tsvg)")
      ->check(CLI::IsMember({"text", "json", "dot"}));
  cmd->add_flag("--eval", args->eval,
                "Run the reference interpreter (float64) once on the graph after the passes, on "
                "the first batch of each --input, and print its loss as mpc run prints the first "
                "step's; with --output NAME=FILE.npy, write values");
  cmd->add_option("--input", args->inputs,
                  "With --eval: NAME=FILE.npy, the dataset of input NAME (its first rows form "
                  "the batch); one per input");
  cmd->add_option("--seed", args->seed,
                  "With --eval: the seed of the initial parameter values, as mpc compile --seed "
                  "(default 0)");
  args->common.addTo(*cmd);
  cmd->callback([args, output] {
    if (!args->eval) {
      if (!args->inputs.empty()) throw UserError("", "--input", "--input is for --eval");
      if (args->outputs.size() > 1)
        throw UserError("", "--output",
                        "one -o/--output names the IR's file; several NAME=FILE.npy are for "
                        "--eval");
      if (!args->outputs.empty()) args->output = args->outputs[0];
    }
    if (args->common.microbatchesAuto)
      throw UserError("", "--microbatches",
                      "auto is chosen by mpc compile, which compiles each candidate; give mpc opt "
                      "a number");
    compiler::CompileOptions options =
        args->common.compileOptions(compiler::DefaultPipeline::None);
    std::vector<OutputTarget> targets = args->common.outputTargets();
    // -o "" is refused, not taken for stdout.
    if (output->count() > 0 && !args->eval) targets.push_back({"-o", args->output});
    if (args->eval)
      for (const std::string &spec : args->outputs)
        targets.push_back({"--output", runtime::train::splitSpec(spec, "--output").second});
    checkOutputTargets(targets, {args->model});
    auto graph = runPasses(args->model, options);
    if (args->eval) {
      evaluate(*graph, *args);
      return;
    }
    std::string out = args->emit == "json"  ? ir::writeModelJson(*graph)
                      : args->emit == "dot" ? ir::writeDot(*graph)
                                            : ir::printGraph(*graph);
    if (args->output.empty()) std::cout << out << std::flush;
    else writeFileAtomic(args->output, out);
  });
}

} // namespace mpc::tool
