//===- bench/PipelineBench.cpp - what pipelining buys ---------------------===//
//
// Google Benchmark programs for pipeline parallelism (docs/pipelining.md),
// each with its baseline measured in the same run:
//   * PipelinedMlpStep/M: two balanced stages on 2 CPU devices: a 4 x 1024
//     tanh MLP, batch 512, two layers per device, the input 1536 wide so
//     that both stages do the same GEMM work (bench/MlpModel.h), mse, SGD;
//     the step time with M micro-batches under 1f1b, zb-h1, zb-h2 and
//     zb-h2+all (zb-h2 with --in-flight=M: the last stage puts all its W
//     off to the end of the step), in 12 rounds taken in turns with the baselines (in a round each
//     runs one step untimed, then 8 timed, overlapped as `mpc run` runs
//     them: Executor::runSteps). Counters:
//       <s>_speedup        unpipelined step time (M = 1, the same devices:
//                          the stages already overlap their backward
//                          there) / schedule s's step time, the median
//                          over the rounds of the ratio within a round;
//                          `speedup` is the best schedule's;
//       <s>_ms             schedule s's fastest round, per step;
//       <s>_bubble         measured: 1 - T(one device, M = 1) / (p * step
//                          time), fastest rounds, device time not spent on
//                          the one-device work;
//       <s>_predicted      the cost model's bubble of overlapped steps
//                          (compile --stats);
//       bubble_analytic    (p-1)/(M+p-1), 1F1B's bound.
//   * Schedules/p/M: gpipe, 1f1b, zb-h1 and zb-h2 in one run on p balanced
//     stages (p = 2: 4 x 1024 layers, batch 512; p = 4: 8 x 512 layers,
//     batch 256; two layers per stage, the input 1.5 times as wide), in 12
//     rounds taken in turns (one step untimed, then 4 timed, overlapped).
//     Counters per schedule: <s>_ms (the fastest round, per step), <s>_vs_1f1b (step
//     time against 1F1B's, the median over the rounds of the ratio within
//     a round), <s>_bubble (measured: 1 - T(one device) / (p * fastest
//     round)), <s>_predicted (the cost model's bubble of overlapped
//     steps).
//   * OverlappedSteps/M: what overlapping steps (Executor::runSteps) gains
//     on the PipelinedMlpStep model, per plan (unpipelined, 1f1b, zb-h1,
//     zb-h2, zb-h2+all with M micro-batches): in 10 rounds taken in turns, one step
//     untimed, 8 single steps (step()) and 8 overlapped ones. Counters:
//     <s>_single_ms, <s>_overlapped_ms (fastest rounds, per step) and
//     <s>_gain (single / overlapped, the median over the rounds).
//   * StageZeroArena: an 8 x 256 tanh MLP, batch 4096, on p = 4 stages with
//     M = 16 micro-batches (activations outweigh the weights, as where
//     pipelining is used); the peak arena of stage 0 under 1F1B / under
//     GPipe, and with --recompute=full against without, under each
//     (compile-time figures, no timing).
// Run: cmake --build build --target mpc-pipeline-bench &&
//      build/bench/mpc-pipeline-bench
//
//===----------------------------------------------------------------------===//
#include "bench/BenchMain.h"
#include "bench/BenchUtil.h"
#include "bench/MlpModel.h"
#include "codegen/Lower.h"
#include "compiler/Compile.h"
#include "runtime/Executor.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace mpc;
using bench::mlpModelJson;
using bench::fastest;
using bench::fillInputs;
using bench::medianRatio;
using bench::pairedSteps;

struct Compiled {
  std::unique_ptr<ir::Graph> graph;
  plan::Plan plan;
};

/// `schedule` is a schedule's name, or "zb-h2+all": zb-h2 with every
/// micro-batch in flight (--in-flight=M, on the two stages it is used on;
/// below M = 3 zb-h2's own bound, 2p - 1, already lets them all be).
Compiled compile(const std::string &json, int64_t microbatches, const std::string &schedule,
                 std::map<std::string, std::string> groupMap = {},
                 const std::string &recompute = "none") {
  passes::PassOptions options;
  options.recompute = recompute;
  options.microbatches = microbatches;
  const size_t plus = schedule.find("+all");
  options.schedule = schedule.substr(0, plus);
  if (plus != std::string::npos) options.inFlight = std::max<int64_t>(microbatches, 3);
  options.groupMap = std::move(groupMap);
  Compiled c;
  c.graph = compiler::compileGraph(json, options);
  c.plan = codegen::lowerToPlan(*c.graph, codegen::LowerOptions{0});
  return c;
}

constexpr int kBatch = 512, kWidth = 1024, kLayers = 4;
const std::string kSgd = R"({"sgd": {"lr": 0.001}})";
const std::vector<std::string> kSpeedSchedules = {"1f1b", "zb-h1", "zb-h2", "zb-h2+all"};

/// Each schedule's plan of `json` with `m` micro-batches, ready to run
/// (inputs filled), and the cost model's bubble for it, of overlapped steps
/// as the benchmarks time them.
struct ScheduleRuns {
  std::vector<std::unique_ptr<runtime::Executor>> executors;
  std::vector<double> predictedBubble;
};

ScheduleRuns compileSchedules(const std::string &json, int64_t m,
                              const std::vector<std::string> &schedules) {
  ScheduleRuns r;
  for (const std::string &s : schedules) {
    Compiled c = compile(json, m, s);
    r.predictedBubble.push_back(codegen::predictPipelineCost(c.plan).overlappedBubble);
    r.executors.push_back(std::make_unique<runtime::Executor>(std::move(c.plan)));
    fillInputs(*r.executors.back());
  }
  return r;
}

void PipelinedMlpStep(benchmark::State &state) {
  const int64_t m = state.range(0);
  const std::string json =
      mlpModelJson(kBatch, kWidth, kLayers, 2, kSgd, bench::balancedInputWidth(kWidth));
  runtime::Executor one(compile(json, 1, "1f1b", {{"s0", "cpu:0"}, {"s1", "cpu:0"}}).plan);
  runtime::Executor flat(compile(json, 1, "1f1b").plan);
  fillInputs(one);
  fillInputs(flat);
  ScheduleRuns pipelined = compileSchedules(json, m, kSpeedSchedules);
  std::vector<runtime::Executor *> runs = {&one, &flat};
  for (auto &ex : pipelined.executors) runs.push_back(ex.get());
  std::vector<std::vector<double>> t;
  for (auto _ : state) t = pairedSteps(runs, 12, 8);
  const double p = 2, oneDevice = fastest(t[0]), unpipelined = fastest(t[1]);
  state.counters["unpipelined_ms"] = unpipelined * 1e3;
  state.counters["bubble_analytic"] = (p - 1) / (double(m) + p - 1);
  double best = 0;
  for (size_t i = 0; i < kSpeedSchedules.size(); ++i) {
    const std::string &s = kSpeedSchedules[i];
    const std::vector<double> &steps = t[2 + i];
    const double speedup = medianRatio(t[1], steps);
    best = std::max(best, speedup);
    state.counters[s + "_ms"] = fastest(steps) * 1e3;
    state.counters[s + "_speedup"] = speedup;
    state.counters[s + "_bubble"] = 1.0 - oneDevice / (p * fastest(steps));
    state.counters[s + "_predicted"] = pipelined.predictedBubble[i];
  }
  state.counters["speedup"] = best;
}
BENCHMARK(PipelinedMlpStep)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)
    ->Iterations(1);

void OverlappedSteps(benchmark::State &state) {
  const int64_t m = state.range(0);
  const std::string json =
      mlpModelJson(kBatch, kWidth, kLayers, 2, kSgd, bench::balancedInputWidth(kWidth));
  std::vector<std::string> names = {"unpipelined"};
  for (const std::string &s : kSpeedSchedules) names.push_back(s);
  runtime::Executor flat(compile(json, 1, "1f1b").plan);
  fillInputs(flat);
  ScheduleRuns pipelined = compileSchedules(json, m, kSpeedSchedules);
  std::vector<runtime::Executor *> ex = {&flat};
  for (auto &e : pipelined.executors) ex.push_back(e.get());
  std::vector<std::vector<double>> single(names.size()), overlapped(names.size());
  for (auto _ : state)
    for (int r = 0; r < 10; ++r)
      for (size_t j = 0; j < names.size(); ++j) {
        const size_t i = (j + size_t(r)) % names.size();
        ex[i]->step();
        auto t0 = bench::Clock::now();
        for (int s = 0; s < 8; ++s) ex[i]->step();
        auto t1 = bench::Clock::now();
        ex[i]->runSteps(8);
        auto t2 = bench::Clock::now();
        single[i].push_back(std::chrono::duration<double>(t1 - t0).count() / 8);
        overlapped[i].push_back(std::chrono::duration<double>(t2 - t1).count() / 8);
      }
  for (size_t i = 0; i < names.size(); ++i) {
    state.counters[names[i] + "_single_ms"] = fastest(single[i]) * 1e3;
    state.counters[names[i] + "_overlapped_ms"] = fastest(overlapped[i]) * 1e3;
    state.counters[names[i] + "_gain"] = medianRatio(single[i], overlapped[i]);
  }
}
BENCHMARK(OverlappedSteps)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->Iterations(1);

void Schedules(benchmark::State &state) {
  const int p = int(state.range(0));
  const int64_t m = state.range(1);
  const std::string json =
      p == 2 ? mlpModelJson(512, 1024, 4, 2, kSgd, bench::balancedInputWidth(1024))
             : mlpModelJson(256, 512, 8, p, kSgd, bench::balancedInputWidth(512));
  std::map<std::string, std::string> oneDeviceMap;
  for (int s = 0; s < p; ++s) oneDeviceMap["s" + std::to_string(s)] = "cpu:0";
  runtime::Executor one(compile(json, 1, "1f1b", oneDeviceMap).plan);
  fillInputs(one);
  const std::vector<std::string> schedules = {"gpipe", "1f1b", "zb-h1", "zb-h2"};
  ScheduleRuns runs = compileSchedules(json, m, schedules);
  std::vector<runtime::Executor *> turns = {&one};
  for (auto &ex : runs.executors) turns.push_back(ex.get());
  std::vector<std::vector<double>> t;
  for (auto _ : state) t = pairedSteps(turns, 12, 4);
  const double oneDevice = fastest(t[0]);
  for (size_t i = 0; i < schedules.size(); ++i) {
    const std::string &s = schedules[i];
    state.counters[s + "_ms"] = fastest(t[1 + i]) * 1e3;
    state.counters[s + "_vs_1f1b"] = medianRatio(t[1 + i], t[2]);
    state.counters[s + "_bubble"] = 1.0 - oneDevice / (double(p) * fastest(t[1 + i]));
    state.counters[s + "_predicted"] = runs.predictedBubble[i];
  }
}
BENCHMARK(Schedules)->Args({2, 4})->Args({2, 8})->Args({4, 4})->Args({4, 8})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

void StageZeroArena(benchmark::State &state) {
  const std::string json = mlpModelJson(4096, 256, 8, 4);
  uint64_t ofob = 0, gpipe = 0, full = 0, ofobFull = 0;
  for (auto _ : state) {
    ofob = compile(json, 16, "1f1b").plan.devices[0].arenaBytes;
    gpipe = compile(json, 16, "gpipe").plan.devices[0].arenaBytes;
    full = compile(json, 16, "gpipe", {}, "full").plan.devices[0].arenaBytes;
    ofobFull = compile(json, 16, "1f1b", {}, "full").plan.devices[0].arenaBytes;
  }
  state.counters["1f1b_KiB"] = double(ofob) / 1024;
  state.counters["gpipe_KiB"] = double(gpipe) / 1024;
  state.counters["1f1b_vs_gpipe"] = double(ofob) / double(gpipe);
  state.counters["gpipe_full_recompute_vs_gpipe"] = double(full) / double(gpipe);
  state.counters["1f1b_full_recompute_vs_1f1b"] = double(ofobFull) / double(ofob);
}
BENCHMARK(StageZeroArena)->Unit(benchmark::kMillisecond)->Iterations(1);

} // namespace

int main(int argc, char **argv) { return mpc::bench::runBenchmarks(argc, argv); }
