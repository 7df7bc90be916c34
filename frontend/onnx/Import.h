//===- frontend/onnx/Import.h - an ONNX model as an mpc model --------------===//
//
// `mpc import-onnx MODEL.onnx -o model.json` (docs/import-onnx.md). The
// driver of the importer: reads and checks the file (OnnxFile.h), folds
// what is known at import (Constant.h), fuses the exporter's decompositions
// of GELU and layer norm (Fuse.h), maps each remaining node through its
// table entry (OpMapping.h), adds the loss and the optimizer, then reads the
// emitted model back with the ir reader (mpc's own shape rules) and compares
// every shape with ONNX's inference. Names stay ONNX's: a value is named by
// its ONNX name, a parameter by its initializer's (PyTorch's state_dict
// name). Errors name the file and the ONNX node.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ImportOptions.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mpc::frontend::onnx {

struct ImportOptions {
  std::vector<InputSpec> inputs;
  /// loss "": none (an error for a training model: ONNX carries no loss)
  TrainingOptions training;
  std::string modelName;  ///< default: the file's name without ".onnx"
  std::string outputFile; ///< names the emitted model in messages
  /// --group REGEX=GROUP, in order: a node whose name matches REGEX
  /// (anywhere; the first rule that matches) goes to device group GROUP.
  std::vector<std::pair<std::string, std::string>> groups;
};

struct ImportResult {
  std::string modelJson; ///< the emitted model, as written
  /// For --params-out: the initializers' values (parameters, running
  /// statistics, constants kept as frozen parameters).
  std::vector<FloatTensor> arrays;
  /// Constants the model keeps as frozen parameters (lr_mult 0): their
  /// values come only with --params-out.
  std::vector<std::string> frozen;
  std::vector<std::string> notes; ///< printed as warnings by the driver
};

ImportResult importOnnx(const std::string &file, const ImportOptions &options);
/// The same from the file's bytes (`file` names it in messages).
ImportResult importOnnxBytes(const std::string &bytes, const std::string &file,
                             const ImportOptions &options);

/// Parses "REGEX=GROUP" (--group); throws UserError naming the flag.
std::pair<std::string, std::string> parseGroupRule(const std::string &text);

/// "Add, AveragePool, ...": the ONNX ops mpc imports, for messages.
std::string supportedOpList();

/// `mpc import-onnx --list-ops`: a Markdown table of every ONNX op mpc
/// imports and what it becomes, then the ops it folds at import only
/// (docs/import-onnx.md holds it).
std::string supportedOpTable();

} // namespace mpc::frontend::onnx
