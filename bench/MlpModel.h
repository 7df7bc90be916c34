//===- bench/MlpModel.h - the dense MLP of the pipeline and data-parallel benchmarks ===//
//
// A chain of `layers` dense tanh layers of width `width` (h = a·w, a =
// tanh(h)), batch `batch`, layer l on device group "s<l·stages/layers>", mse
// loss against an input of the output's shape, and `optimizer` (plain SGD
// by default). Groups map to cpu:0, cpu:1, ... in order of appearance.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <string>

namespace mpc::bench {

inline std::string mlpModelJson(int batch, int width, int layers, int stages,
                                const std::string &optimizer = R"({"sgd": {"lr": 0.001}})") {
  std::ostringstream os;
  os << R"({"mpc": 1, "name": "mlp", "inputs": {"x": {"shape": [)" << batch << "," << width
     << R"(]}, "y": {"shape": [)" << batch << "," << width << R"(]}}, "params": {)";
  auto group = [&](int l) { return "s" + std::to_string(l * stages / layers); };
  for (int l = 0; l < layers; ++l)
    os << (l ? "," : "") << "\"w" << l << R"(": {"shape": [)" << width << "," << width
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

} // namespace mpc::bench
