//===- test/unit/runtime_cuda/CudaTrainingTest.cpp - whole plans on GPUs -===//
//
// Models compiled for gpu:0, gpu:1, gpu:2 train on the CUDA runtime (all
// three mapped onto one physical GPU, which exercises streams, events and
// copies exactly like three GPUs) and on the CPU runtime from the same
// initial values and batches; the parameters must agree within 1e-4
// relative. A wider model prints an events-based overlap measurement (per
// device busy time against the wall time of a step); the figures depend on
// the machine, so only their consistency is asserted (each device's span
// inside the step's, the step's inside the host's). With --cuda-graphs
// (CudaOptions::cudaGraphs) every step equals the one-by-one launches' bit
// for bit, dropout's per-step masks included. Skips, saying so, without a
// GPU.
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime_cuda/CudaTestUtil.h"

#include "compiler/Compile.h"
#include "runtime/Executor.h"
#include "runtime/cuda/CudaDevice.h"
#include "support/Error.h"
#include "test/unit/SeedModel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

namespace mpc::runtime::cuda {
namespace {

/// An MLP classifier over three stages: relu, gelu, cross-entropy, SGD with
/// momentum. WIDTH and BATCH are substituted.
const char *kMlpTemplate = R"json({
  "mpc": 1, "name": "mlp3",
  "inputs": { "x": {"shape": [BATCH, 48]}, "labels": {"shape": [BATCH], "dtype": "i32"} },
  "params": {
    "w0": {"shape": [48, WIDTH], "init": {"xavier": {"magnitude": 2.0}}, "device": "stage0"},
    "b0": {"shape": [WIDTH],     "init": {"constant": 0.01},           "device": "stage0"},
    "w1": {"shape": [WIDTH, WIDTH], "init": {"xavier": {"magnitude": 2.0}}, "device": "stage1"},
    "b1": {"shape": [WIDTH],     "init": {"constant": 0.01},           "device": "stage1"},
    "w2": {"shape": [WIDTH, 10], "init": {"xavier": {"magnitude": 2.0}}, "device": "stage2"},
    "b2": {"shape": [10],        "init": {"constant": 0.0},            "device": "stage2"}
  },
  "nodes": [
    {"name": "h0", "op": "matmul", "inputs": ["x", "w0"], "device": "stage0"},
    {"name": "a0", "op": "add",    "inputs": ["h0", "b0"], "device": "stage0"},
    {"name": "r0", "op": "relu",   "inputs": ["a0"], "device": "stage0"},
    {"name": "h1", "op": "matmul", "inputs": ["r0", "w1"], "device": "stage1"},
    {"name": "a1", "op": "add",    "inputs": ["h1", "b1"], "device": "stage1"},
    {"name": "r1", "op": "gelu",   "inputs": ["a1"], "device": "stage1"},
    {"name": "h2", "op": "matmul", "inputs": ["r1", "w2"], "device": "stage2"},
    {"name": "z",  "op": "add",    "inputs": ["h2", "b2"], "device": "stage2"},
    {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["z", "labels"], "device": "stage2"}
  ],
  "loss": "loss", "outputs": ["z"],
  "optimizer": {"sgd": {"lr": 0.05, "momentum": 0.9}}
})json";

/// A CNN classifier over three stages: conv2d (bias, padding), relu,
/// max_pool2d; a grouped conv2d, avg_pool2d (ceil_mode, count_include_pad
/// false); global_avg_pool2d and flatten into two dense heads.
const char *kCnnJson = R"json({
  "mpc": 1, "name": "cnn3",
  "inputs": { "x": {"shape": [8, 3, 12, 12]}, "labels": {"shape": [8], "dtype": "i32"} },
  "params": {
    "w1": {"shape": [8, 3, 3, 3], "init": {"xavier": {"magnitude": 2.0}}, "device": "stage0"},
    "b1": {"shape": [8],          "init": {"constant": 0.01},           "device": "stage0"},
    "w2": {"shape": [16, 4, 3, 3], "init": {"xavier": {"magnitude": 2.0}}, "device": "stage1"},
    "w3": {"shape": [256, 10],    "init": {"xavier": {"magnitude": 2.0}}, "device": "stage2"},
    "w4": {"shape": [16, 10],     "init": {"xavier": {"magnitude": 2.0}}, "device": "stage2"}
  },
  "nodes": [
    {"name": "c1", "op": "conv2d", "inputs": ["x", "w1", "b1"], "attrs": {"padding": [1, 1]},
     "device": "stage0"},
    {"name": "r1", "op": "relu", "inputs": ["c1"], "device": "stage0"},
    {"name": "p1", "op": "max_pool2d", "inputs": ["r1"], "attrs": {"kernel": [2, 2]},
     "device": "stage0"},
    {"name": "c2", "op": "conv2d", "inputs": ["p1", "w2"],
     "attrs": {"groups": 2, "padding": [1, 1]}, "device": "stage1"},
    {"name": "r2", "op": "relu", "inputs": ["c2"], "device": "stage1"},
    {"name": "p2", "op": "avg_pool2d", "inputs": ["r2"],
     "attrs": {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": true,
               "count_include_pad": false}, "device": "stage1"},
    {"name": "f", "op": "flatten", "inputs": ["p2"], "device": "stage2"},
    {"name": "g", "op": "global_avg_pool2d", "inputs": ["r2"], "device": "stage2"},
    {"name": "fg", "op": "flatten", "inputs": ["g"], "device": "stage2"},
    {"name": "h", "op": "matmul", "inputs": ["f", "w3"], "device": "stage2"},
    {"name": "hg", "op": "matmul", "inputs": ["fg", "w4"], "device": "stage2"},
    {"name": "z", "op": "add", "inputs": ["h", "hg"], "device": "stage2"},
    {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["z", "labels"], "device": "stage2"}
  ],
  "loss": "loss", "outputs": ["z"],
  "optimizer": {"sgd": {"lr": 0.05, "momentum": 0.9}}
})json";

std::string mlpJson(int width, int batch, bool dropout = false) {
  std::string s = kMlpTemplate;
  if (dropout) {
    // r0 -> d0 (p 0.25) -> h1, r1 -> d1 (p 0.5) -> h2: masks that change each step.
    for (auto [from, to] : {std::pair<std::string, std::string>{
                                R"("inputs": ["r0", "w1"])",
                                R"("inputs": ["d0", "w1"])"},
                            {R"("inputs": ["r1", "w2"])", R"("inputs": ["d1", "w2"])"},
                            {R"({"name": "h1",)",
                             R"({"name": "d0", "op": "dropout", "inputs": ["r0"], "attrs": {"p": 0.25}, "device": "stage0"},
    {"name": "h1",)"},
                            {R"({"name": "h2",)",
                             R"({"name": "d1", "op": "dropout", "inputs": ["r1"], "attrs": {"p": 0.5}, "device": "stage1"},
    {"name": "h2",)"}})
      s.replace(s.find(from), from.size(), to);
  }
  for (auto [key, value] : {std::pair<std::string, int>{"WIDTH", width}, {"BATCH", batch}})
    for (size_t at; (at = s.find(key)) != std::string::npos;)
      s.replace(at, key.size(), std::to_string(value));
  return s;
}

plan::Plan compileFor(const std::string &json, std::vector<std::string> devices,
                      int64_t microbatches = 1, const std::string &schedule = "1f1b",
                      int64_t replicas = 1, int zero = 0) {
  passes::PassOptions options;
  // One device: every stage of the three-stage models on it.
  if (devices.size() == 1)
    for (const char *stage : {"stage0", "stage1", "stage2"}) options.groupMap[stage] = devices[0];
  options.devices = std::move(devices);
  options.microbatches = microbatches;
  options.schedule = schedule;
  options.dataParallel = replicas;
  options.zero = zero;
  return compiler::compileModel(json, std::move(options), /*seed=*/7);
}

/// Deterministic batches for every input of `p`: floats N(0,1); integer
/// inputs are class labels in [0, 10); regression targets follow the seed's
/// y = 2 x0 - 3.4 x1 + 4.2.
std::vector<std::vector<std::vector<uint8_t>>> makeBatches(const plan::Plan &p, int count) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<std::vector<std::vector<uint8_t>>> batches;
  for (int b = 0; b < count; ++b) {
    std::vector<std::vector<uint8_t>> feeds(p.inputs.size());
    std::vector<float> x;
    // Features and labels first, then targets computed from the features.
    for (int pass = 0; pass < 2; ++pass)
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        const plan::TensorRef &t = p.inputs[k];
        bool target = t.name == "y";
        if (target != (pass == 1)) continue;
        size_t n = size_t(t.numElements());
        std::vector<uint8_t> &bytes = feeds[k];
        bytes.resize(n * 4);
        if (t.dtype == plan::DType::I32) {
          for (size_t i = 0; i < n; ++i) {
            int32_t v = int32_t(rng() % 10);
            std::memcpy(&bytes[i * 4], &v, 4);
          }
        } else if (target) {
          for (size_t i = 0; i < n; ++i) {
            float v = 2.f * x[2 * i] - 3.4f * x[2 * i + 1] + 4.2f;
            std::memcpy(&bytes[i * 4], &v, 4);
          }
        } else {
          x.resize(n);
          for (float &v : x) v = normal(rng);
          std::memcpy(bytes.data(), x.data(), n * 4);
        }
      }
    batches.push_back(std::move(feeds));
  }
  return batches;
}

struct Trained {
  std::vector<std::vector<float>> params;
  std::vector<float> losses;
};

Trained train(Executor &exec, const std::vector<std::vector<std::vector<uint8_t>>> &batches,
              int steps) {
  const plan::Plan &p = exec.plan();
  Trained t;
  for (int s = 0; s < steps; ++s) {
    const auto &feeds = batches[size_t(s) % batches.size()];
    for (size_t i = 0; i < p.inputs.size(); ++i)
      exec.write(p.inputs[i], feeds[i].data(), feeds[i].size());
    exec.step();
    if (s % 5 == 4) t.losses.push_back(exec.loss()); // the only host syncs
  }
  for (const plan::TensorRef &r : p.params) t.params.push_back(exec.readFloats(r));
  return t;
}

CudaOptions allOnGpu0(const plan::Plan &p) {
  CudaOptions o;
  for (const plan::DeviceProgram &d : p.devices) o.deviceMap[d.device] = 0;
  return o;
}

void expectSameParams(const plan::Plan &p, const Trained &gpu, const Trained &cpu) {
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  for (size_t k = 0; k < gpu.params.size(); ++k) {
    double worst = 0;
    for (size_t i = 0; i < gpu.params[k].size(); ++i)
      worst = std::max(worst, test::relDiff(gpu.params[k][i], cpu.params[k][i]));
    EXPECT_LE(worst, 1e-4) << "param '" << p.params[k].name << "'";
  }
  ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
  for (size_t i = 0; i < gpu.losses.size(); ++i)
    EXPECT_LE(test::relDiff(gpu.losses[i], cpu.losses[i]), 1e-4) << "loss " << i;
}

void trainBothAndCompare(const std::string &json, int steps, const CudaOptions *opts = nullptr,
                         int64_t microbatches = 1, const std::string &schedule = "1f1b") {
  plan::Plan p = compileFor(json, {"gpu:0", "gpu:1", "gpu:2"}, microbatches, schedule);
  ASSERT_EQ(p.devices.size(), 3u);
  auto batches = makeBatches(p, 4);
  CudaOptions options = opts ? *opts : allOnGpu0(p);
  CudaRun run = prepareCudaRun(p, options);
  Executor gpuExec(p, run.factory, std::move(run.transport));
  Executor cpuExec(p);
  Trained gpu = train(gpuExec, batches, steps);
  Trained cpu = train(cpuExec, batches, steps);
  expectSameParams(p, gpu, cpu);
  // It really trained: the loss moved.
  ASSERT_GE(gpu.losses.size(), 2u);
  EXPECT_NE(gpu.losses.front(), gpu.losses.back());
}

// Runs everywhere: the models of the GPU tests compile for gpu:0..2 (here
// pipelined, 4 micro-batches) and the CPU runtime (which runs gpu:N devices
// as CPU workers) trains them, so a GPU failure below is the CUDA runtime's,
// not the test's.
TEST(CudaTrainingSetup, ModelsCompileForThreeGpuDevicesAndTrainOnTheCpuRuntime) {
  for (const std::string &json :
       {std::string(test::seedModelJson()), mlpJson(96, 64), std::string(kCnnJson),
        mlpJson(96, 64, /*dropout=*/true)}) {
    plan::Plan p = compileFor(json, {"gpu:0", "gpu:1", "gpu:2"}, /*microbatches=*/4);
    ASSERT_EQ(p.devices.size(), 3u);
    EXPECT_TRUE(planUsesGpu(p));
    Executor exec(p);
    Trained t = train(exec, makeBatches(p, 1), 40); // one batch: the loss must fall
    ASSERT_GE(t.losses.size(), 2u);
    EXPECT_LT(t.losses.back(), t.losses.front()) << p.model;
  }
  // The graphs test's one-device plan: every stage on gpu:0, no transfers.
  plan::Plan one = compileFor(mlpJson(96, 64, true), {"gpu:0"});
  ASSERT_EQ(one.devices.size(), 1u);
  for (const plan::Instr &in : one.devices[0].instrs)
    EXPECT_EQ(in.kind, plan::InstrKind::Kernel) << in.op;
}

TEST(CudaTraining, SeedModelOnThreeDevicesMatchesCpuRuntime) {
  MPC_REQUIRE_GPU();
  trainBothAndCompare(test::seedModelJson(), 40);
}

TEST(CudaTraining, MlpOnThreeDevicesMatchesCpuRuntime) {
  MPC_REQUIRE_GPU();
  trainBothAndCompare(mlpJson(96, 64), 30);
}

TEST(CudaTraining, CnnOnThreeDevicesMatchesCpuRuntime) {
  MPC_REQUIRE_GPU();
  trainBothAndCompare(kCnnJson, 30);
}

// Pipelined plans are ordinary instruction lists (slices, concats, the
// schedule's order): the CUDA runtime runs them like any other plan.
TEST(CudaTraining, PipelinedMlpMatchesCpuRuntimeUnderEverySchedule) {
  MPC_REQUIRE_GPU();
  for (const char *schedule : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2"}) {
    SCOPED_TRACE(schedule);
    trainBothAndCompare(mlpJson(96, 64), 30, nullptr, 4, schedule);
  }
}

// Data-parallel replicas on GPU devices: the gradient all-reduces (and
// ZeRO-1's reduce-scatters and all-gathers) are staged through pinned host
// memory and summed as the CPU runtime sums them, so parameters and losses
// equal the CPU runtime's bit for bit where the kernels agree, and within
// the kernels' tolerance here. Six logical devices on one physical GPU.
TEST(CudaTraining, DataParallelAndZeroMatchCpuRuntime) {
  MPC_REQUIRE_GPU();
  const std::vector<std::string> devices = {"gpu:0", "gpu:1", "gpu:2",
                                            "gpu:3", "gpu:4", "gpu:5"};
  for (int zero : {0, 1}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    plan::Plan p = compileFor(mlpJson(96, 64), devices, 2, "1f1b", 2, zero);
    ASSERT_EQ(p.devices.size(), 6u);
    auto batches = makeBatches(p, 4);
    CudaRun run = prepareCudaRun(p, allOnGpu0(p));
    Executor gpuExec(p, run.factory, std::move(run.transport));
    Executor cpuExec(p);
    Trained gpu = train(gpuExec, batches, 20);
    Trained cpu = train(cpuExec, batches, 20);
    expectSameParams(p, gpu, cpu);
    ASSERT_GE(gpu.losses.size(), 2u);
    EXPECT_NE(gpu.losses.front(), gpu.losses.back());
  }
}

TEST(CudaTraining, MlpOnThreeGpusWithNcclMatchesCpuRuntime) {
  MPC_REQUIRE_GPU();
  if (visibleGpuCount() < 3) GTEST_SKIP() << "needs 3 GPUs, " << visibleGpuCount() << " visible";
  if (!ncclAvailable()) GTEST_SKIP() << "built without NCCL";
  CudaOptions o;
  o.transport = TransportKind::Nccl;
  trainBothAndCompare(mlpJson(96, 64), 30, &o);
}

TEST(CudaTraining, CopiesOverlapComputeTimingIsConsistent) {
  MPC_REQUIRE_GPU();
  plan::Plan p = compileFor(mlpJson(2048, 1024), {"gpu:0", "gpu:1", "gpu:2"});
  auto batches = makeBatches(p, 1);
  CudaRun run = prepareCudaRun(p, allOnGpu0(p));
  std::shared_ptr<CudaRunInfo> info = run.info;
  Executor exec(p, run.factory, std::move(run.transport));
  train(exec, batches, 5); // warm up
  info->enableTiming(true);
  const int steps = 20;
  // Event resolution is about half a microsecond (cudaEventElapsedTime).
  const float slackMs = 0.01f;
  float busy = 0, wall = 0;
  double hostMs = 0;
  for (int s = 0; s < steps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    auto t0 = std::chrono::steady_clock::now();
    exec.step();
    StepTiming t = info->lastStepTiming(); // synchronizes every device
    double stepHostMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    hostMs += stepHostMs;
    // Every device runs kernels, so each has a span; no span is longer than
    // the step's span over all three (they share GPU 0's clock), and that
    // span lies inside the host's view of the step.
    ASSERT_EQ(t.deviceMs.size(), 3u);
    for (size_t d = 0; d < t.deviceMs.size(); ++d) {
      EXPECT_GT(t.deviceMs[d], 0.f) << "device " << d;
      EXPECT_LE(t.deviceMs[d], t.wallMs + slackMs) << "device " << d;
      busy += t.deviceMs[d];
    }
    EXPECT_LE(t.wallMs, stepHostMs + slackMs);
    wall += t.wallMs;
  }
  std::printf("[ overlap ] 3 devices on GPU 0: per step %.3f ms device-busy (sum over devices), "
              "%.3f ms wall (events), ratio %.2f; host %.3f ms/step incl. timing syncs\n",
              busy / steps, wall / steps, wall > 0 ? busy / wall : 0.f, hostMs / steps);
}

// `mpc run --trace` on GPUs: every instruction of every device once per
// step, in order, each span ending where the next begins, and a step's
// spans inside the host's view of the step (the events' clock paired with
// the host's when tracing started).
TEST(CudaTraining, TracedStepsRecordEveryInstructionOnTheStreamsClock) {
  MPC_REQUIRE_GPU();
  plan::Plan p = compileFor(mlpJson(256, 64), {"gpu:0", "gpu:1", "gpu:2"});
  auto batches = makeBatches(p, 1);
  CudaRun run = prepareCudaRun(p, allOnGpu0(p));
  Executor exec(p, run.factory, std::move(run.transport));
  train(exec, batches, 2); // warm up
  exec.setTracing(true);
  for (int s = 0; s < 3; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    int64_t before = traceClockNs();
    exec.step();
    for (uint32_t d = 0; d < p.devices.size(); ++d) {
      std::vector<InstrSpan> spans;
      exec.takeSpans(d, spans); // waits for the device's last event
      int64_t after = traceClockNs();
      ASSERT_EQ(spans.size(), p.devices[d].instrs.size()) << p.devices[d].device;
      for (size_t i = 0; i < spans.size(); ++i) {
        EXPECT_EQ(spans[i].instr, i);
        EXPECT_LE(spans[i].begin, spans[i].end);
        if (i) {
          EXPECT_EQ(spans[i].begin, spans[i - 1].end);
        }
      }
      // Event resolution is about half a microsecond; the pairing of the
      // clocks is within the reference's synchronisation (tens of us).
      const int64_t slackNs = 100000;
      EXPECT_GE(spans.front().begin, before - slackNs);
      EXPECT_LE(spans.back().end, after + slackNs);
    }
  }
  exec.setTracing(false);
  exec.step();
  std::vector<InstrSpan> none;
  exec.takeSpans(0, none);
  EXPECT_TRUE(none.empty()) << "tracing off records nothing";
}

/// `steps` steps of `p` on GPU 0 (every logical device mapped there), with
/// or without CUDA graphs; `runs`: the graph runs each device launches.
Trained trainOnGpu0(const plan::Plan &p, bool graphs, int steps, std::vector<size_t> *runs) {
  CudaOptions o = allOnGpu0(p);
  o.cudaGraphs = graphs;
  CudaRun run = prepareCudaRun(p, o);
  std::shared_ptr<CudaRunInfo> info = run.info;
  Executor exec(p, run.factory, std::move(run.transport));
  Trained t = train(exec, makeBatches(p, 3), steps);
  if (runs)
    for (CudaBackend *b : info->backends) runs->push_back(b ? b->graphRuns() : 0);
  return t;
}

void expectBitIdentical(const plan::Plan &p, const Trained &a, const Trained &b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t k = 0; k < a.params.size(); ++k) {
    ASSERT_EQ(a.params[k].size(), b.params[k].size());
    EXPECT_EQ(std::memcmp(a.params[k].data(), b.params[k].data(), a.params[k].size() * 4), 0)
        << "param '" << p.params[k].name << "'";
  }
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], 4), 0) << "loss " << i;
}

// --cuda-graphs: one device's step is one graph; in a pipeline the work
// between transfers is. Dropout's masks depend on the step, which a graph
// captured in step 1 must still see change (it is read on the device), so
// replayed steps equal launched ones bit for bit, and equal the CPU
// runtime's within the kernels' tolerance.
TEST(CudaGraphs, ReplayedStepsEqualLaunchedStepsBitForBit) {
  MPC_REQUIRE_GPU();
  struct Case {
    std::vector<std::string> devices;
    int64_t microbatches;
    const char *schedule;
  };
  for (const Case &c : {Case{{"gpu:0"}, 1, "1f1b"}, Case{{"gpu:0", "gpu:1", "gpu:2"}, 4, "1f1b"},
                        Case{{"gpu:0", "gpu:1", "gpu:2"}, 4, "zb-h2"}}) {
    SCOPED_TRACE(std::to_string(c.devices.size()) + " devices, " + c.schedule);
    plan::Plan p = compileFor(mlpJson(96, 64, /*dropout=*/true), c.devices, c.microbatches,
                              c.schedule);
    std::vector<size_t> runs;
    Trained graphs = trainOnGpu0(p, true, 12, &runs);
    Trained launched = trainOnGpu0(p, false, 12, nullptr);
    expectBitIdentical(p, graphs, launched);
    ASSERT_EQ(runs.size(), p.devices.size());
    for (size_t d = 0; d < runs.size(); ++d) EXPECT_GE(runs[d], 1u) << p.devices[d].device;
    if (c.devices.size() == 1) {
      EXPECT_EQ(runs[0], 1u) << "one device without transfers: the whole step is one graph";
    }
    Executor cpuExec(p);
    expectSameParams(p, graphs, train(cpuExec, makeBatches(p, 3), 12));
  }
}

TEST(CudaGraphs, TracingIsRefused) {
  MPC_REQUIRE_GPU();
  plan::Plan p = compileFor(mlpJson(32, 16), {"gpu:0"});
  CudaOptions o = allOnGpu0(p);
  o.cudaGraphs = true;
  CudaRun run = prepareCudaRun(p, o);
  Executor exec(p, run.factory, std::move(run.transport));
  try {
    exec.setTracing(true);
    FAIL() << "tracing a graph-replayed step was accepted";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("cannot trace a step run as CUDA graphs"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace mpc::runtime::cuda
