//===- bench/MlpModel.h - the dense MLP of the pipeline and data-parallel benchmarks ===//
//
// A chain of `layers` dense tanh layers of width `width` (h = a·w, a =
// tanh(h)), batch `batch`, layer l on device group "s<l·stages/layers>", mse
// loss against an input of the output's shape, and `optimizer` (plain SGD
// by default). Groups map to cpu:0, cpu:1, ... in order of appearance.
// `inputWidth` (default: `width`) widens the input x and the first weight:
// the first layer needs no input gradient, so with two layers per stage
// the first stage does 5 GEMMs where the others do 6; with the input 1.5
// times as wide all do equal work (balancedInputWidth).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <string>

namespace mpc::bench {

inline std::string mlpModelJson(int batch, int width, int layers, int stages,
                                const std::string &optimizer = R"({"sgd": {"lr": 0.001}})",
                                int inputWidth = 0) {
  if (inputWidth <= 0) inputWidth = width;
  std::ostringstream os;
  os << R"({"mpc": 1, "name": "mlp", "inputs": {"x": {"shape": [)" << batch << "," << inputWidth
     << R"(]}, "y": {"shape": [)" << batch << "," << width << R"(]}}, "params": {)";
  auto group = [&](int l) { return "s" + std::to_string(l * stages / layers); };
  for (int l = 0; l < layers; ++l)
    os << (l ? "," : "") << "\"w" << l << R"(": {"shape": [)" << (l ? width : inputWidth) << "," << width
       << R"(], "init": {"xavier": {"magnitude": 1.0}}, "device": ")" << group(l) << "\"}";
  os << R"(}, "nodes": [)";
  std::string in = "x";
  for (int l = 0; l < layers; ++l) {
    std::string h = "h" + std::to_string(l), a = "a" + std::to_string(l);
    os << (l ? "," : "") << R"({"name": ")" << h << R"(", "op": "matmul", "inputs": [")" << in
       << R"(", "w)" << l << R"("], "device": ")" << group(l) << "\"},"
       << R"({"name": ")" << a << R"(", "op": "tanh", "inputs": [")" << h << "\"]}";
    in = a;
  }
  os << R"(,{"name": "loss", "op": "mse_loss", "inputs": [")" << in << R"(", "y"]}],)"
     << R"("loss": "loss", "optimizer": )" << optimizer << "}";
  return os.str();
}

/// The input width that gives stages of two `width` layers each equal GEMM
/// work: the first multiplies x·w0, a0·w1 forward, dh1·w1ᵀ and both weight
/// gradients (2·in·width + 3·width² per row), every other stage six
/// width × width GEMMs (6·width²).
inline int balancedInputWidth(int width) { return width * 3 / 2; }

} // namespace mpc::bench
