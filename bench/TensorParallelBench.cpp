//===- bench/TensorParallelBench.cpp - what tensor parallelism buys -------===//
//
// Google Benchmark programs for tensor parallelism (docs/parallelism.md,
// "Tensor parallelism"), each with its baseline measured in the same run.
// The model is Megatron-LM's MLP block, x [B, W] -> W1 [W, W] split by
// columns -> gelu -> W2 [W, W] split by rows -> + x, mse against y, Adam:
// one all-reduce forward, one backward (the block input's gradient).
//   * Memory/t: compile-time figures of the plan at t = 1, 2, 4 (W = 1024,
//     B = 64): per device, the persistent bytes (parameters, Adam state,
//     inputs) and the arena peak, the device holding the most; ratios
//     against t = 1.
//       param_state_MiB, arena_MiB, persistent_ratio, arena_ratio
//   * Step/t: the step time of the wide block (W = 4096, B = 64) at t = 2
//     against t = 1 in the same run, each device a thread of this process.
//       ms/step, baseline_ms (t = 1), speedup (baseline / this)
// Collective bytes against Megatron's formula: bench/tensor-parallel-comm.py.
// Run: cmake --build build --target mpc-tensor-parallel-bench &&
//      build/bench/mpc-tensor-parallel-bench
//
//===----------------------------------------------------------------------===//
#include "bench/BenchMain.h"
#include "bench/BenchUtil.h"
#include "compiler/Compile.h"
#include "runtime/Executor.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace {

using namespace mpc;

/// The MLP block at width `w`, batch `b`, split over the group "mlp".
std::string blockModel(int b, int w, bool split) {
  std::ostringstream os;
  const char *col = split ? R"(, "shard": 1)" : "", *row = split ? R"(, "shard": 0)" : "";
  os << R"({"mpc": 1, "name": "block",
   "inputs": {"x": {"shape": [)" << b << "," << w << R"(], "device": "mlp"}, "y": {"shape": [)" << b
     << "," << w << R"(]}},
   "params": {"w1": {"shape": [)" << w << "," << w
     << R"(], "init": {"normal": {"mean": 0, "std": 0.02}})" << col << R"(},
              "b1": {"shape": [)" << w << R"(], "init": "zeros")" << row << R"(},
              "w2": {"shape": [)" << w << "," << w
     << R"(], "init": {"normal": {"mean": 0, "std": 0.02}})" << row << R"(},
              "b2": {"shape": [)" << w << R"(], "init": "zeros"}},
   "nodes": [{"name": "h", "op": "matmul", "inputs": ["x", "w1"]},
             {"name": "hb", "op": "add", "inputs": ["h", "b1"]},
             {"name": "a", "op": "gelu", "inputs": ["hb"], "attrs": {"approximate": "tanh"}},
             {"name": "o", "op": "matmul", "inputs": ["a", "w2"]},
             {"name": "ob", "op": "add", "inputs": ["o", "b2"]},
             {"name": "r", "op": "add", "inputs": ["ob", "x"]},
             {"name": "loss", "op": "mse_loss", "inputs": ["r", "y"]}],
   "loss": "loss", "optimizer": {"adam": {"lr": 0.0001}}})";
  return os.str();
}

plan::Plan compileBlock(int b, int w, int t) {
  passes::PassOptions options;
  std::string devices = "cpu:0";
  for (int i = 1; i < t; ++i) devices += "+cpu:" + std::to_string(i);
  options.groupMap["mlp"] = devices;
  return compiler::compileModel(blockModel(b, w, t > 1), options);
}

struct Footprint {
  double persistentMiB = 0, arenaMiB = 0;
};

/// The device holding the most.
Footprint footprint(const plan::Plan &p) {
  Footprint f;
  for (const plan::DeviceProgram &d : p.devices) {
    f.persistentMiB = std::max(f.persistentMiB, double(d.persistentBytes) / (1 << 20));
    f.arenaMiB = std::max(f.arenaMiB, double(d.arenaBytes) / (1 << 20));
  }
  return f;
}

void Memory(benchmark::State &state) {
  const int t = int(state.range(0));
  Footprint base = footprint(compileBlock(64, 1024, 1)), f;
  for (auto _ : state) f = footprint(compileBlock(64, 1024, t));
  state.counters["param_state_MiB"] = f.persistentMiB;
  state.counters["arena_MiB"] = f.arenaMiB;
  state.counters["persistent_ratio"] = f.persistentMiB / base.persistentMiB;
  state.counters["arena_ratio"] = f.arenaMiB / base.arenaMiB;
}
BENCHMARK(Memory)->Arg(1)->Arg(2)->Arg(4)->Iterations(1)->Unit(benchmark::kMillisecond);

constexpr int kWide = 4096, kRows = 64;

double stepSeconds(int t, double minSeconds) {
  plan::Plan p = compileBlock(kRows, kWide, t);
  runtime::Executor ex(p, runtime::cpuBackendFactory());
  bench::fillInputs(ex);
  return bench::secondsPerStep(ex, minSeconds);
}

void Step(benchmark::State &state) {
  const int t = int(state.range(0));
  const double baseline = stepSeconds(1, 2.0);
  plan::Plan p = compileBlock(kRows, kWide, t);
  runtime::Executor ex(p, runtime::cpuBackendFactory());
  bench::fillInputs(ex);
  const double seconds = bench::timedSteps(state, ex);
  state.counters["ms/step"] = seconds * 1e3;
  state.counters["baseline_ms"] = baseline * 1e3;
  state.counters["speedup"] = baseline / seconds;
}
BENCHMARK(Step)->Arg(1)->Arg(2)->MinTime(2.0)->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char **argv) { return mpc::bench::runBenchmarks(argc, argv); }
