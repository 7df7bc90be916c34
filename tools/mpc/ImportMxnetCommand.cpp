//===- tools/mpc/ImportMxnetCommand.cpp - `mpc import-mxnet` -------------===//
//
//   mpc import-mxnet SYMBOL.json -o model.json --input NAME=D0,D1,...[:i32] ...
//       [--loss softmax_cross_entropy|mse] [--inference]
//       [--params FILE.params --params-out init.safetensors]
//       [--optimizer sgd|adam|adamw] [--lr LR] [--momentum M] [--wd WD]
//
// Parses the flags, hands the symbol to the importer library
// (frontend/mxnet/) and writes what it returns: the model JSON and, from a
// .params file, a safetensors file for `mpc run --init` (the library stays
// free of the runtime; the safetensors writer lives in io).
// See docs/import-mxnet.md.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/Import.h"
#include "frontend/mxnet/ParamsFile.h"
#include "frontend/mxnet/SymbolFile.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/ImportFlags.h"

#include <iostream>
#include <memory>

namespace mpc::tool {

namespace {

namespace mx = frontend::mxnet;

struct ImportArgs {
  std::string symbol, output, params, paramsOut;
  ImportFlagArgs flags;
};

void importMxnet(const ImportArgs &a) {
  if (a.params.empty() != a.paramsOut.empty())
    throw UserError("", a.params.empty() ? "--params-out" : "--params",
                    "--params and --params-out go together");
  // Both outputs are checked before any work: neither may be an input, the
  // other output, or in a folder that cannot be written, so a bad
  // --params-out never leaves a model written by -o behind.
  std::vector<OutputTarget> outputs = {{"-o", a.output}};
  if (!a.paramsOut.empty()) outputs.push_back({"--params-out", a.paramsOut});
  std::vector<std::string> inputs = {a.symbol};
  if (!a.params.empty()) inputs.push_back(a.params);
  checkOutputTargets(outputs, inputs);
  mx::ImportOptions opt;
  opt.training = trainingOptions(a.flags);
  opt.inputs = inputSpecs(a.flags);
  opt.modelName = a.flags.name;
  opt.outputFile = a.output;
  mx::SymbolFile sym = mx::readSymbolFile(a.symbol);
  mx::ImportResult r = mx::importSymbol(sym, opt);
  // Warnings are one line each, whatever the names and values they echo.
  for (const std::string &n : r.notes) std::cerr << escapeForLine(n) << "\n";
  // Convert the parameters before writing anything: a bad .params file
  // leaves neither output behind.
  std::vector<frontend::FloatTensor> tensors;
  if (!a.params.empty())
    tensors = mx::matchParams(mx::readParamsFile(a.params), r.arrays, a.params);
  writeImportOutputs(a.output, r.modelJson, a.paramsOut, tensors);
}

} // namespace

void addImportMxnetCommand(CLI::App &app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App *cmd = app.add_subcommand(
      "import-mxnet",
      "Import an MXNet model (*-symbol.json, any era, and optionally its .params) as an mpc "
      "model JSON (docs/import-mxnet.md)");
  cmd->add_option("symbol", args->symbol, "MXNet symbol file (*-symbol.json)")->required();
  cmd->add_option("-o,--output", args->output, "Write the mpc model JSON here")->required();
  ImportFlagHelp help;
  help.input = "NAME=D0,D1,...[:i32]: shape (and dtype, default f32) of the data variable NAME; "
               "the first --input's leading dimension is the batch. Labels default to "
               "i32[batch] (SoftmaxOutput) or the prediction's shape (regression). Repeatable";
  help.inputRequired = true;
  help.loss = "For a symbol without a loss head (a Gluon export): train with this loss on its "
              "one head, fed by a new input 'label' (i32[batch] for softmax_cross_entropy, the "
              "head's shape for mse)";
  help.inference = "Emit an inference model: the same parameters, no loss, labels or optimizer; "
                   "outputs are the heads' forward values (SoftmaxOutput's probabilities); batch "
                   "norm uses its running statistics. Score with mpc run --init";
  help.name = "The model's name (default: the symbol file's, without -symbol.json)";
  addImportFlags(*cmd, args->flags, help);
  auto *params = cmd->add_option(
      "--params", args->params, "MXNet .params file (NDArray list) to convert; needs --params-out");
  cmd->add_option("--params-out", args->paramsOut,
                  "Write the converted parameters and batch-norm running statistics here as "
                  "safetensors, for mpc run --init")
      ->needs(params);
  cmd->callback([args] { importMxnet(*args); });
}

} // namespace mpc::tool
