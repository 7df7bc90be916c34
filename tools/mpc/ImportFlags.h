//===- tools/mpc/ImportFlags.h - the flags every importer takes ------------===//
//
// `mpc import-mxnet` and `mpc import-onnx` take the same --input, --loss,
// --inference, --optimizer, --lr, --momentum, --wd and --name, with the
// same checks; each importer words the help of the ones whose meaning
// depends on its format. Both write their outputs the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ImportOptions.h"

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mpc::tool {

struct ImportFlagArgs {
  std::vector<std::string> inputs;
  std::string loss, optimizer = "sgd", name;
  bool inference = false;
  std::optional<double> lr, momentum, wd;
};

/// The help of the flags whose meaning depends on the format.
struct ImportFlagHelp {
  std::string input, loss, inference, name;
  bool inputRequired = false;
};

void addImportFlags(CLI::App &cmd, ImportFlagArgs &args, const ImportFlagHelp &help);

/// The parsed --input specs; throws UserError naming the flag.
std::vector<frontend::InputSpec> inputSpecs(const ImportFlagArgs &args);
/// The training options; throws UserError for --momentum with adam(w).
frontend::TrainingOptions trainingOptions(const ImportFlagArgs &args);

/// Writes the model JSON to `output` and, when `paramsOut` is not empty,
/// `tensors` to it as safetensors (both atomically).
void writeImportOutputs(const std::string &output, const std::string &modelJson,
                        const std::string &paramsOut,
                        const std::vector<frontend::FloatTensor> &tensors);

} // namespace mpc::tool
