//===- bench/DataParallelBench.cpp - what data parallelism buys -----------===//
//
// Google Benchmark programs for data parallelism (docs/parallelism.md), each
// with its baseline measured in the same run:
//   * WeakScaling/R: a 4 x 1024 tanh MLP on one CPU device per replica, 256
//     rows per replica (batch 256·R), mse, SGD with momentum; the step time
//     with R replicas against R = 1 on the same rows per replica. Counters:
//       ms/step, baseline_ms (R = 1, 256 rows);
//       time_ratio        this step time / the baseline's: 1 is perfect
//                         weak scaling (R times the rows in the same time);
//       throughput_gain   R · baseline / this step time (rows per second
//                         against one replica; the ideal is R, bounded by
//                         the cores);
//       allreduce_predicted_ms  the cost model's in-process price of the
//                         step's gradient all-reduces (codegen/CollectiveCost.h);
//       overhead_ms       this step time - the baseline's: what the
//                         replicas cost beyond their own work (all-reduce
//                         exposed, slicing and sending the rows, contention).
//   * ZeroStep/R: the same model and rows at R replicas under ZeRO-1
//     (--zero=1) against plain data parallelism at that R, both measured in
//     this run (the results are bit-identical; only the time differs).
//     Counters: ms/step, baseline_ms (plain), time_ratio (ZeRO / plain).
//   * StateBytesPerDevice/R/zero: optimizer-state bytes (Adam) on the device
//     holding the most, a compile-time figure from the plan's buffers:
//     without ZeRO every replica holds its stage's full state; with it, a
//     1/R shard (state_ratio: against plain data parallelism at that R).
// Run: cmake --build build --target mpc-data-parallel-bench &&
//      build/bench/mpc-data-parallel-bench
//
//===----------------------------------------------------------------------===//
#include "bench/BenchMain.h"
#include "bench/BenchUtil.h"
#include "bench/MlpModel.h"
#include "codegen/CollectiveCost.h"
#include "compiler/Compile.h"
#include "runtime/Executor.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

namespace {

using namespace mpc;
using bench::mlpModelJson;
using bench::fillInputs;
using bench::secondsPerStep;

constexpr int kRowsPerReplica = 256, kWidth = 1024, kLayers = 4;

plan::Plan compile(int64_t replicas, const std::string &optimizer, int zero = 0) {
  passes::PassOptions options;
  options.dataParallel = replicas;
  if (zero) options.zero = zero;
  return compiler::compileModel(
      mlpModelJson(kRowsPerReplica * int(replicas), kWidth, kLayers, 1, optimizer), options);
}

const char *kSgd = R"({"sgd": {"lr": 0.001, "momentum": 0.9}})";

/// The cost model's in-process seconds for the plan's collectives (each
/// counted once, by its first member).
double predictedAllReduce(const plan::Plan &p) {
  double s = 0;
  for (uint32_t d = 0; d < p.devices.size(); ++d)
    for (const plan::Instr &in : p.devices[d].instrs)
      if (in.kind == plan::InstrKind::Collective && in.group.front() == d)
        s += codegen::collectiveSeconds(p.devices[d], d, in,
                                        codegen::CollectiveTransport::InProcess);
  return s;
}

void WeakScaling(benchmark::State &state) {
  const int64_t r = state.range(0);
  runtime::Executor base(compile(1, kSgd));
  fillInputs(base);
  double baseline = secondsPerStep(base, 1.0);

  plan::Plan p = compile(r, kSgd);
  double predicted = predictedAllReduce(p);
  runtime::Executor ex(std::move(p));
  fillInputs(ex);
  double perStep = bench::timedSteps(state, ex);
  state.counters["ms/step"] = perStep * 1e3;
  state.counters["baseline_ms"] = baseline * 1e3;
  state.counters["time_ratio"] = perStep / baseline;
  state.counters["throughput_gain"] = double(r) * baseline / perStep;
  state.counters["allreduce_predicted_ms"] = predicted * 1e3;
  state.counters["overhead_ms"] = (perStep - baseline) * 1e3;
}
BENCHMARK(WeakScaling)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->MinTime(2.0);

void ZeroStep(benchmark::State &state) {
  const int64_t r = state.range(0);
  const char *adam = R"({"adam": {"lr": 0.001}})";
  runtime::Executor base(compile(r, adam));
  fillInputs(base);
  double baseline = secondsPerStep(base, 1.0);
  runtime::Executor ex(compile(r, adam, 1));
  fillInputs(ex);
  double perStep = bench::timedSteps(state, ex);
  state.counters["ms/step"] = perStep * 1e3;
  state.counters["baseline_ms"] = baseline * 1e3;
  state.counters["time_ratio"] = perStep / baseline;
}
BENCHMARK(ZeroStep)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

/// Bytes of optimizer state on the device that holds the most.
uint64_t maxStateBytesPerDevice(const plan::Plan &p) {
  std::vector<uint64_t> bytes(p.devices.size(), 0);
  for (const plan::TensorRef &t : p.states) {
    for (const plan::Placement &m : t.placements())
      bytes[m.device] += p.devices[m.device].buffers[m.buffer].bytes;
  }
  return *std::max_element(bytes.begin(), bytes.end());
}

void StateBytesPerDevice(benchmark::State &state) {
  const int64_t r = state.range(0);
  const int zero = int(state.range(1));
  const char *adam = R"({"adam": {"lr": 0.001}})";
  uint64_t perDevice = 0, plain = 0;
  for (auto _ : state) {
    perDevice = maxStateBytesPerDevice(compile(r, adam, zero));
    plain = zero ? maxStateBytesPerDevice(compile(r, adam)) : perDevice;
  }
  state.counters["state_MiB_per_device"] = double(perDevice) / (1 << 20);
  state.counters["state_ratio"] = double(perDevice) / double(plain);
}
BENCHMARK(StateBytesPerDevice)
    ->Args({1, 0})->Args({2, 0})->Args({2, 1})->Args({4, 0})->Args({4, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

} // namespace

int main(int argc, char **argv) { return mpc::bench::runBenchmarks(argc, argv); }
