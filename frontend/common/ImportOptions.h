//===- frontend/common/ImportOptions.h - what every importer is asked ------===//
//
// The settings `mpc import-mxnet` and `mpc import-onnx` share: input shapes
// (--input NAME=D0,D1,...[:i32]), the loss added to a model without one
// (--loss), --inference, the optimizer (--optimizer, --lr, --momentum,
// --wd) and the model's name; and the writing of the emitted model, one
// input, param or node per line as ir::writeModelJson lays it out.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mpc::frontend {

/// --input NAME=D0,D1,...[:i32]
struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool i32 = false;
};

/// Parses "NAME=D0,D1,...[:i32]"; throws UserError naming --input.
InputSpec parseInputSpec(const std::string &text);

/// How the imported model trains (or not).
struct TrainingOptions {
  std::string loss;       ///< "" (the model's own), "softmax_cross_entropy" or "mse"
  bool inference = false; ///< no loss, labels or optimizer
  std::string optimizer = "sgd";
  std::optional<double> lr, momentum, weightDecay;
};

/// The model's "optimizer" section: {"sgd": {"lr": ..., ...}}.
nlohmann::ordered_json optimizerJson(const TrainingOptions &t);

/// A model name from a file name: the base name without `suffixes` (the
/// first that matches), characters other than [A-Za-z0-9_.-] as '_'.
std::string modelNameFromFile(const std::string &file, const std::vector<std::string> &suffixes);

/// The parts of an emitted model.
struct ModelParts {
  std::string name;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  std::optional<std::string> loss;
  std::vector<std::string> outputs;
  std::optional<nlohmann::ordered_json> optimizer;
};

/// The model JSON text, one input, param or node per line.
std::string writeModelText(const ModelParts &m);

/// A float32 tensor an importer hands the driver for --params-out (the
/// importers are runtime-free; the driver writes safetensors).
struct FloatTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

} // namespace mpc::frontend
