//===- bench/ChainModel.h - the deep-chain model of the compile benchmark -===//
//
// A deep MLP as model JSON: `layers` layers of h = x·w + b, a = tanh(h),
// batch 8, width 16, cut into `stages` equal groups of consecutive layers
// ("s0", "s1", ...) so that placement, copies in both directions and one
// device program per stage all appear; mse loss, plain SGD. After autodiff
// and the optimizer that is 15 nodes a layer (240k at 16k layers). Small
// tensors on purpose: what grows with the layer count is the number of
// nodes, buffers and instructions, which is what compile time should be
// linear in.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <string>

namespace mpc::bench {

inline std::string chainModelJson(int layers, int stages = 4, int batch = 8, int width = 16) {
  std::ostringstream os;
  auto group = [&](int l) { return "s" + std::to_string(int64_t(l) * stages / layers); };
  os << "{\"mpc\": 1, \"name\": \"chain" << layers << "\",\n \"inputs\": {\"x\": {\"shape\": ["
     << batch << ", " << width << "]}, \"y\": {\"shape\": [" << batch << ", " << width
     << "]}},\n \"params\": {";
  for (int l = 0; l < layers; ++l)
    os << (l ? ",\n" : "\n") << "  \"w" << l << "\": {\"shape\": [" << width << ", " << width
       << "], \"init\": {\"xavier\": {\"magnitude\": 1.0}}, \"device\": \"" << group(l)
       << "\"},\n  \"b" << l << "\": {\"shape\": [" << width
       << "], \"init\": {\"constant\": 0.0}, \"device\": \"" << group(l) << "\"}";
  os << "},\n \"nodes\": [";
  std::string in = "x";
  for (int l = 0; l < layers; ++l) {
    std::string s = std::to_string(l), dev = group(l);
    os << (l ? ",\n" : "\n") << "  {\"name\": \"h" << s
       << "\", \"op\": \"matmul\", \"inputs\": [\"" << in << "\", \"w" << s
       << "\"], \"device\": \"" << dev << "\"},\n"
       << "  {\"name\": \"z" << s << "\", \"op\": \"add\", \"inputs\": [\"h" << s << "\", \"b"
       << s << "\"]},\n"
       << "  {\"name\": \"a" << s << "\", \"op\": \"tanh\", \"inputs\": [\"z" << s << "\"]}";
    in = "a" + s;
  }
  os << ",\n  {\"name\": \"loss\", \"op\": \"mse_loss\", \"inputs\": [\"" << in
     << "\", \"y\"]}\n ],\n \"loss\": \"loss\",\n \"optimizer\": {\"sgd\": {\"lr\": 0.001}}\n}\n";
  return os.str();
}

} // namespace mpc::bench
