//===- tools/mpc/ImportOnnxCommand.cpp - `mpc import-onnx` ----------------===//
//
//   mpc import-onnx MODEL.onnx -o model.json [--input NAME=D0,D1,...[:i32]]
//       [--loss softmax_cross_entropy|mse | --inference] [--params-out F]
//       [--optimizer sgd|adam|adamw] [--lr X] [--momentum X] [--wd X]
//       [--name N] [--group REGEX=GROUP ...]
//
// Parses flags, runs the importer (frontend/onnx/) and writes what it
// returns: the model JSON and, with --params-out, the initializers as
// safetensors for mpc run --init. See docs/import-onnx.md.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/Import.h"
#include "frontend/onnx/OnnxFile.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/ImportFlags.h"

#include <iostream>
#include <memory>

namespace mpc::tool {

namespace {

namespace ox = frontend::onnx;

struct ImportArgs {
  std::string model, output, paramsOut;
  std::vector<std::string> groups;
  ImportFlagArgs flags;
};

void importOnnx(const ImportArgs &a) {
  // Both outputs are checked before any work: neither may be the model,
  // the other output, or in a folder that cannot be written.
  std::vector<OutputTarget> outputs = {{"-o", a.output}};
  if (!a.paramsOut.empty()) outputs.push_back({"--params-out", a.paramsOut});
  checkOutputTargets(outputs, {a.model});
  ox::ImportOptions opt;
  opt.training = trainingOptions(a.flags);
  opt.inputs = inputSpecs(a.flags);
  opt.modelName = a.flags.name;
  opt.outputFile = a.output;
  for (const std::string &g : a.groups) opt.groups.push_back(ox::parseGroupRule(g));
  ox::ImportResult r = ox::importOnnx(a.model, opt);
  for (const std::string &n : r.notes) std::cerr << escapeForLine(n) << "\n";
  if (a.paramsOut.empty() && !r.frozen.empty())
    std::cerr << escapeForLine("mpc import-onnx: warning: " + std::to_string(r.frozen.size()) +
                               " constant" + (r.frozen.size() == 1 ? " is" : "s are") +
                               " kept as frozen parameters (first: " + r.frozen[0] +
                               "); their values come only with --params-out and mpc run --init")
              << "\n";
  writeImportOutputs(a.output, r.modelJson, a.paramsOut, r.arrays);
}

} // namespace

void addImportOnnxCommand(CLI::App &app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App *cmd = app.add_subcommand(
      "import-onnx",
      "Import an ONNX model (opsets " + std::to_string(ox::kMinOpset) + " to " +
          std::to_string(ox::kMaxOpset) +
          ", e.g. from torch.onnx.export) as an mpc model JSON (docs/import-onnx.md)");
  cmd->add_option("model", args->model, "ONNX model file (*.onnx)")->required();
  cmd->add_option("-o,--output", args->output, "Write the mpc model JSON here")->required();
  ImportFlagHelp help;
  help.input = "NAME=D0,D1,...[:i32]: the shape of input NAME, fixing its symbolic dimensions "
               "(the batch); :i32 for an int64 or int32 input (indices). Inputs whose shape "
               "the model fixes need none. Repeatable";
  help.loss = "Train with this loss on the model's one output, fed by a new input 'label' "
              "(i32[batch] for softmax_cross_entropy over (batch, classes), the output's "
              "shape for mse). An ONNX model carries no loss: a training import needs it";
  help.inference = "Emit an inference model: no loss, labels or optimizer; outputs are the "
                   "graph's outputs; dropout is the identity and batch norm uses its running "
                   "statistics. Score with mpc run --init";
  help.name = "The model's name (default: the file's, without .onnx)";
  addImportFlags(*cmd, args->flags, help);
  cmd->add_option("--params-out", args->paramsOut,
                  "Write the initializers (parameters under their ONNX names, PyTorch's "
                  "state_dict names; batch-norm running statistics; constants kept as frozen "
                  "parameters) as safetensors, for mpc run --init");
  cmd->add_option("--group", args->groups,
                  "REGEX=GROUP: nodes whose name matches REGEX (anywhere; anchor with ^ and $) "
                  "go to device group GROUP, the first rule that matches deciding; map groups "
                  "to devices with mpc compile --map. Without it, place the model with mpc "
                  "compile --placement=auto --devices=... Repeatable");
  cmd->add_flag_callback(
      "--list-ops",
      [] {
        std::cout << ox::supportedOpTable();
        throw CLI::Success();
      },
      "Print the ONNX ops mpc imports, and what each becomes, as a Markdown table, and exit");
  cmd->callback([args] { importOnnx(*args); });
}

} // namespace mpc::tool
