//===- bench/StepBench.cpp - step time of the CPU runtime ---------------===//
//
// Google Benchmark programs, each compiling its model in-process exactly as
// `mpc compile` does and timing Executor::step():
//   * SeedModelStep/T: the seed model (three affine layers on three devices,
//     batch 100, Adam) on T executor threads (0: the default). Tiny kernels:
//     the figure is dominated by dispatch and cross-device hand-offs.
//   * Mlp4x1024Step: 4 dense 1024-wide layers with relu on 2 devices (two
//     layers each), batch 64, mse loss, SGD. Dominated by sgemm.
//   * MlpTanhStep: the same layers with tanh, batch 1024, on one device
//     (one thread, the setting bench/compare-pytorch.py runs PyTorch in):
//     sgemm plus the activations and their backward over 4M-element tensors.
//   * SeedModelTraced: the seed model on the default threads with
//     tracing on (mpc run --trace: every instruction's begin and end read
//     from the steady clock, the spans taken after each step as the trainer
//     takes them), against the same plan untraced in the same run
//     (traced_vs_plain: the ratio of step times).
//   * InstructionOverhead: a forward-only chain of 1000 `neg` kernels on an
//     f32[1] on one device: time per instruction of the executor.
// Each reports counters, and a baseline measured in the same run so that the
// figures read as ratios, independent of the machine:
//   * vs_sgemm (MLP): step time / time of the same 12 cblas_sgemm calls
//     (forward, dX and dW of each layer) issued back to back on one thread;
//   * vs_loop (overhead): time per instruction / time per call of the same
//     negation through a plain function pointer in a loop;
//   * vs_seq (seed model): step time / the same plan compiled for one device.
// See docs/runtime.md for how to run it and the recorded figures.
//
//===----------------------------------------------------------------------===//
#include "bench/BenchUtil.h"
#include "compiler/Compile.h"
#include "runtime/Executor.h"
#include "runtime/cpu/BlasCore.h"
#include "support/FileIO.h"

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <random>
#include <sstream>

namespace {

using namespace mpc;
using bench::Clock;
using bench::fillInputs;
using bench::secondsPerStep;

plan::Plan compileJson(const std::string &json,
                       std::map<std::string, std::string> groupMap = {}) {
  passes::PassOptions options;
  options.groupMap = std::move(groupMap);
  return compiler::compileModel(json, std::move(options));
}

void runSteps(benchmark::State &state, runtime::Executor &ex) {
  for (auto _ : state) ex.step();
  state.counters["instr/step"] = double(ex.instructionsPerStep());
}

void SeedModelStep(benchmark::State &state) {
  std::string json = readFileText(std::string(MPC_SOURCE_DIR) + "/examples/regression3/model.json");
  runtime::Executor one(compileJson(json, {{"stage0", "cpu:0"}, {"stage1", "cpu:0"},
                                           {"stage2", "cpu:0"}}));
  fillInputs(one);
  double baseline = secondsPerStep(one, 0.2);
  auto threads = unsigned(state.range(0));
  runtime::Executor ex(compileJson(json), runtime::cpuBackendFactory(), nullptr, {}, threads);
  fillInputs(ex);
  auto start = Clock::now();
  runSteps(state, ex);
  double perStep =
      std::chrono::duration<double>(Clock::now() - start).count() / double(state.iterations());
  state.counters["us/step"] = perStep * 1e6;
  state.counters["devices"] = double(ex.numDevices());
  state.counters["threads"] = double(ex.numThreads());
  state.counters["vs_seq"] = perStep / baseline;
  state.counters["ns/instr"] = perStep * 1e9 / double(ex.instructionsPerStep());
}
// Argument: Executor threads (0: the default, which is 1 for this plan's
// little work per message; 2: devices 0 and 1 on one thread; 3: a thread per
// device).
BENCHMARK(SeedModelStep)->Arg(0)->Arg(2)->Arg(3)->Unit(benchmark::kMicrosecond)->UseRealTime();

void SeedModelTraced(benchmark::State &state) {
  std::string json = readFileText(std::string(MPC_SOURCE_DIR) + "/examples/regression3/model.json");
  runtime::Executor plain(compileJson(json));
  fillInputs(plain);
  double baseline = secondsPerStep(plain, 0.5);
  runtime::Executor ex(compileJson(json));
  fillInputs(ex);
  ex.setTracing(true);
  size_t spans = 0;
  std::vector<runtime::InstrSpan> taken;
  auto start = Clock::now();
  for (auto _ : state) {
    ex.step();
    for (uint32_t d = 0; d < ex.numDevices(); ++d) {
      taken.clear();
      ex.takeSpans(uint32_t(d), taken);
      spans += taken.size();
    }
  }
  double perStep =
      std::chrono::duration<double>(Clock::now() - start).count() / double(state.iterations());
  state.counters["us/step"] = perStep * 1e6;
  state.counters["baseline_us"] = baseline * 1e6;
  state.counters["traced_vs_plain"] = perStep / baseline;
  state.counters["spans/step"] = double(spans) / double(state.iterations());
}
BENCHMARK(SeedModelTraced)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.5);

constexpr int kWidth = 1024, kLayers = 4;

struct MlpShape {
  int batch;
  const char *activation;
  bool twoDevices;
};

std::string mlpJson(const MlpShape &shape) {
  const int kBatch = shape.batch;
  auto dev = [&](int l) { return shape.twoDevices && l >= 2 ? "b" : "a"; };
  std::ostringstream os;
  os << R"({"mpc": 1, "name": "mlp4x1024", "inputs": {"x": {"shape": [)" << kBatch << ","
     << kWidth << R"(]}, "y": {"shape": [)" << kBatch << "," << kWidth << R"(]}}, "params": {)";
  for (int l = 0; l < kLayers; ++l)
    os << (l ? "," : "") << "\"w" << l << R"(": {"shape": [)" << kWidth << "," << kWidth
       << R"(], "init": {"xavier": {"magnitude": 2.0}}, "device": ")" << dev(l)
       << R"("}, "b)" << l << R"(": {"shape": [)" << kWidth
       << R"(], "init": {"constant": 0.0}, "device": ")" << dev(l) << "\"}";
  os << R"(}, "nodes": [)";
  std::string in = "x";
  for (int l = 0; l < kLayers; ++l) {
    std::string h = "h" + std::to_string(l), z = "z" + std::to_string(l),
                a = "a" + std::to_string(l);
    os << (l ? "," : "") << R"({"name": ")" << h << R"(", "op": "matmul", "inputs": [")" << in
       << R"(", "w)" << l << R"("], "device": ")" << dev(l) << "\"},"
       << R"({"name": ")" << z << R"(", "op": "add", "inputs": [")" << h << R"(", "b)" << l
       << "\"]}";
    in = z;
    if (l + 1 < kLayers) {
      os << R"(,{"name": ")" << a << R"(", "op": ")" << shape.activation << R"(", "inputs": [")"
         << z << "\"]}";
      in = a;
    }
  }
  os << R"(,{"name": "loss", "op": "mse_loss", "inputs": [")" << in << R"(", "y"]}],)"
     << R"("loss": "loss", "optimizer": {"sgd": {"lr": 0.001}}})";
  return os.str();
}

/// The 12 sgemm calls of one MLP step (forward, dX, dW per layer), one thread.
double sgemmBaselineSeconds(int kBatch) {
  std::vector<float> act(size_t(kBatch) * kWidth, 0.5f), w(size_t(kWidth) * kWidth, 0.01f),
      out(size_t(kBatch) * kWidth), dw(size_t(kWidth) * kWidth);
  auto once = [&] {
    for (int l = 0; l < kLayers; ++l) // forward: [B,W] x [W,W]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBatch, kWidth, kWidth, 1.f,
                  act.data(), kWidth, w.data(), kWidth, 0.f, out.data(), kWidth);
    for (int l = 0; l < kLayers; ++l) {
      // dX = dY W^T and dW = X^T dY
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kBatch, kWidth, kWidth, 1.f,
                  out.data(), kWidth, w.data(), kWidth, 0.f, act.data(), kWidth);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kWidth, kWidth, kBatch, 1.f,
                  act.data(), kWidth, out.data(), kWidth, 0.f, dw.data(), kWidth);
    }
  };
  once();
  int n = 0;
  auto start = Clock::now();
  double el = 0;
  do {
    once();
    ++n;
    el = std::chrono::duration<double>(Clock::now() - start).count();
  } while (el < 0.5);
  return el / n;
}

void mlpStep(benchmark::State &state, const MlpShape &shape) {
  runtime::Executor ex(compileJson(mlpJson(shape)));
  fillInputs(ex);
  double baseline = sgemmBaselineSeconds(shape.batch);
  auto start = Clock::now();
  runSteps(state, ex);
  double perStep =
      std::chrono::duration<double>(Clock::now() - start).count() / double(state.iterations());
  double flops = 3.0 * kLayers * 2.0 * shape.batch * double(kWidth) * kWidth; // fwd + dX + dW
  state.counters["us/step"] = perStep * 1e6;
  state.counters["devices"] = double(ex.numDevices());
  state.counters["GFLOP/s"] = flops / perStep * 1e-9;
  state.counters["sgemm_GFLOP/s"] = flops / baseline * 1e-9;
  state.counters["vs_sgemm"] = perStep / baseline;
}

void Mlp4x1024Step(benchmark::State &state) { mlpStep(state, {64, "relu", true}); }
BENCHMARK(Mlp4x1024Step)->Unit(benchmark::kMillisecond)->UseRealTime();

void MlpTanhStep(benchmark::State &state) { mlpStep(state, {1024, "tanh", false}); }
BENCHMARK(MlpTanhStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

constexpr int kChain = 1000;

std::string chainJson() {
  std::ostringstream os;
  os << R"({"mpc": 1, "name": "chain", "inputs": {"x": {"shape": [1]}}, "nodes": [)";
  std::string prev = "x";
  for (int i = 0; i < kChain; ++i) {
    std::string n = "n" + std::to_string(i);
    os << (i ? "," : "") << R"({"name": ")" << n << R"(", "op": "neg", "inputs": [")" << prev
       << "\"]}";
    prev = n;
  }
  os << R"(], "outputs": [")" << prev << "\"]}";
  return os.str();
}

using NegFn = void (*)(const float *, float *, int64_t);
void negKernel(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = -x[i];
}
NegFn volatile gNeg = negKernel; // defeats inlining: one indirect call per op

double loopBaselineSecondsPerCall() {
  std::vector<float> buf(2 * kChain + 2, 1.f);
  int64_t calls = 0;
  auto start = Clock::now();
  double el = 0;
  do {
    for (int i = 0; i < kChain; ++i) gNeg(&buf[size_t(i)], &buf[size_t(i + 1)], 1);
    calls += kChain;
    el = std::chrono::duration<double>(Clock::now() - start).count();
  } while (el < 0.2);
  benchmark::DoNotOptimize(buf.data());
  return el / double(calls);
}

void InstructionOverhead(benchmark::State &state) {
  runtime::Executor ex(compileJson(chainJson()));
  fillInputs(ex);
  double baseline = loopBaselineSecondsPerCall();
  auto start = Clock::now();
  runSteps(state, ex);
  double perStep =
      std::chrono::duration<double>(Clock::now() - start).count() / double(state.iterations());
  double perInstr = perStep / double(ex.instructionsPerStep());
  state.counters["us/step"] = perStep * 1e6;
  state.counters["ns/instr"] = perInstr * 1e9;
  state.counters["vs_loop"] = perInstr / baseline;
}
BENCHMARK(InstructionOverhead)->Unit(benchmark::kMicrosecond)->UseRealTime();

} // namespace

// OpenBLAS with the kernels this CPU has, as `mpc run` gets them
// (runtime/cpu/BlasCore.h), then Google Benchmark's usual main.
int main(int argc, char **argv) {
  mpc::runtime::cpu::reexecWithFittingBlasCore(argv);
  // For bench/compare-pytorch.py: the kernels in use, after the re-exec.
  if (argc > 1 && std::string(argv[1]) == "--print-blas-core") {
    std::printf("%s\n", mpc::runtime::cpu::blasCoreName().c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
