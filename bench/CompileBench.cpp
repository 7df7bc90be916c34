//===- bench/CompileBench.cpp - compile time against model depth ----------===//
//
// How compile time grows with the model: the deep chain of bench/ChainModel.h
// at 1k, 4k and 16k layers (or the layer counts given), each compiled as
// `mpc compile` does it (read the JSON, the default pipeline with the
// verifier on, lowering to a plan), in process. Prints, per size, the graph
// and plan sizes and the best of a few runs, then the exponent
// log(t_last / t_prev) / log(n_last / n_prev) between the two largest sizes:
// 1.0 is linear, and the time per node, which a linear compiler keeps flat.
//
// Run: cmake --build build --target mpc-compile-bench &&
//      build/bench/mpc-compile-bench [LAYERS...]
//      build/bench/mpc-compile-bench --emit-model N > chain.json
// (the second form writes the model, for timing an `mpc` binary on it:
// scripts/compile-time.py). Figures: docs/passes.md, "Compile time".
//
//===----------------------------------------------------------------------===//
#include "bench/ChainModel.h"
#include "compiler/Compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  int layers = 0;
  size_t nodes = 0, instrs = 0;
  double seconds = 0;
};

Sample measure(int layers) {
  std::string json = mpc::bench::chainModelJson(layers);
  Sample s;
  s.layers = layers;
  // Fewer repetitions for the large sizes: the minimum of the runs is kept
  // (the least disturbed by the other work on the machine).
  int runs = layers <= 4000 ? 3 : 2;
  for (int r = 0; r < runs; ++r) {
    auto start = Clock::now();
    auto graph = mpc::compiler::compileGraph(json);
    mpc::plan::Plan plan = mpc::codegen::lowerToPlan(*graph, mpc::codegen::LowerOptions{0});
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    s.seconds = r == 0 ? t : std::min(s.seconds, t);
    s.nodes = graph->nodes().size();
    s.instrs = 0;
    for (const auto &d : plan.devices) s.instrs += d.instrs.size();
  }
  return s;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--emit-model" && i + 1 < argc) {
      std::cout << mpc::bench::chainModelJson(std::atoi(argv[i + 1]));
      return 0;
    }
    int n = std::atoi(a.c_str());
    if (n <= 0) {
      std::cerr << "usage: mpc-compile-bench [LAYERS...] | --emit-model LAYERS\n";
      return 1;
    }
    sizes.push_back(n);
  }
  if (sizes.empty()) sizes = {1000, 4000, 16000};
  std::vector<Sample> samples;
  std::printf("%8s %9s %9s %10s %12s\n", "layers", "nodes", "instrs", "seconds", "us/node");
  for (int n : sizes) {
    Sample s = measure(n);
    samples.push_back(s);
    std::printf("%8d %9zu %9zu %10.3f %12.2f\n", s.layers, s.nodes, s.instrs, s.seconds,
                1e6 * s.seconds / double(s.nodes));
    std::fflush(stdout);
  }
  if (samples.size() >= 2) {
    const Sample &a = samples[samples.size() - 2], &b = samples.back();
    double exponent = std::log(b.seconds / a.seconds) / std::log(double(b.layers) / a.layers);
    std::printf("exponent %d -> %d layers: %.3f (1.0 is linear)\n", a.layers, b.layers,
                exponent);
  }
  return 0;
}
