//===- test/unit/runtime/PipelineTest.cpp - pipelining changes nothing ---===//
//
// Pipelining changes when work runs, never what it computes. Each model is
// compiled unpipelined and with M micro-batches under each schedule, and
// trained for a few steps on the CPU runtime with the same data:
//   * the loss of every step and the parameters and optimizer state at the
//     end equal the unpipelined plan's within float reassociation (1e-5,
//     Glow's min of absolute and relative error);
//   * the unpipelined graph run by the float64 reference interpreter agrees
//     too (the reference for both);
//   * the model's output equals the unpipelined output;
//   * M = 1 gives exactly the unpipelined plan (the same bytes).
// Models: a 4-stage tanh MLP (mse and cross-entropy; SGD with momentum and
// Adam) for M in {1, p-1, p, 2p}; a parameter used by two stages; uneven
// stages; a loss on a middle device; a chain interleaved over two devices.
// Each plan also passes the lowering checks (no live overlap, updates after
// readers), and 1F1B keeps at most p - s micro-batches in flight on stage s.
// The zero-bubble schedules (zb-h1, zb-h2) train bit for bit as 1F1B does,
// with dropout, batch_norm and a parameter shared by two stages, and keep
// their bounds on open micro-batches.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "ir/Interpreter.h"
#include "plan/PlanIO.h"
#include "runtime/Executor.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"
#include "test/unit/runtime/Batches.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <random>
#include <set>

namespace mpc::runtime {
namespace {

using ir::opcases::errorOf;
using nlohmann::json;

constexpr int64_t kBatch = 24;
const std::vector<std::string> kSchedules = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                                             "zb-h2"};

json optimizerJson(const std::string &kind) {
  if (kind == "adam") return {{"adam", {{"lr", 0.01}}}};
  return {{"sgd", {{"lr", 0.05}, {"momentum", 0.9}}}};
}

/// A chain of dense tanh layers; layer i on `devices[i]`; the loss on
/// `lossDevice` (default: the last layer's). `loss` is "mse" or "xent".
json chainModel(const std::vector<std::string> &devices, const std::string &loss,
                const std::string &optimizer, const std::string &lossDevice = "") {
  const int64_t width = 6, classes = 3;
  json m = {{"mpc", 1}, {"name", "chain"}};
  m["inputs"]["x"] = {{"shape", {kBatch, width}}};
  if (loss == "mse") m["inputs"]["y"] = {{"shape", {kBatch, classes}}};
  else m["inputs"]["y"] = {{"shape", {kBatch}}, {"dtype", "i32"}};
  json nodes = json::array();
  std::string cur = "x";
  for (size_t i = 0; i < devices.size(); ++i) {
    std::string w = "w" + std::to_string(i), b = "b" + std::to_string(i);
    int64_t out = i + 1 == devices.size() ? classes : width;
    m["params"][w] = {{"shape", {width, out}},
                      {"init", {{"xavier", {{"magnitude", 2.0}}}}},
                      {"device", devices[i]}};
    m["params"][b] = {{"shape", {out}}, {"init", {{"constant", 0.1}}}, {"device", devices[i]}};
    std::string h = "h" + std::to_string(i), z = "z" + std::to_string(i);
    nodes.push_back({{"name", h}, {"op", "matmul"}, {"inputs", {cur, w}}, {"device", devices[i]}});
    nodes.push_back({{"name", z}, {"op", "add"}, {"inputs", {h, b}}, {"device", devices[i]}});
    cur = z;
    if (i + 1 < devices.size()) {
      std::string a = "a" + std::to_string(i);
      nodes.push_back({{"name", a}, {"op", "tanh"}, {"inputs", {cur}}, {"device", devices[i]}});
      cur = a;
    }
  }
  json lossNode = {{"name", "loss"},
                   {"op", loss == "mse" ? "mse_loss" : "softmax_cross_entropy"},
                   {"inputs", {cur, "y"}},
                   {"device", lossDevice.empty() ? devices.back() : lossDevice}};
  nodes.push_back(lossNode);
  m["nodes"] = nodes;
  m["loss"] = "loss";
  m["outputs"] = {cur};
  m["optimizer"] = optimizerJson(optimizer);
  return m;
}

struct Compiled {
  std::unique_ptr<ir::Graph> graph;
  plan::Plan plan;
};

Compiled compile(const json &model, int64_t microbatches, const std::string &schedule,
                 const std::string &recompute = "", int64_t inFlight = 0) {
  compiler::CompileOptions options;
  if (microbatches > 0) options.passes.microbatches = microbatches;
  if (!schedule.empty()) options.passes.schedule = schedule;
  if (!recompute.empty()) options.passes.recompute = recompute;
  if (inFlight > 0) options.passes.inFlight = inFlight;
  Compiled c;
  c.graph = compiler::compileGraph(model.dump(), options);
  plan::Plan p = compiler::lower(*c.graph, options);
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  c.plan = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
  return c;
}

std::vector<float> readNamed(Executor &ex, const std::vector<plan::TensorRef> &refs,
                             const std::string &name) {
  for (const plan::TensorRef &t : refs)
    if (t.name == name) return ex.readFloats(t);
  ADD_FAILURE() << "no tensor '" << name << "'";
  return {};
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(errorOf(got[i], want[i]), 1e-5) << what << "[" << i << "]: " << got[i] << " vs "
                                               << want[i];
}

/// Trains `steps` steps pipelined and unpipelined (and in the interpreter on
/// the unpipelined graph) and compares everything the user can see.
void expectSameTraining(const json &model, int64_t m, const std::string &schedule,
                        int steps = 3) {
  SCOPED_TRACE("M=" + std::to_string(m) + " schedule=" + schedule);
  Compiled ref = compile(model, 0, "");
  Compiled pip = compile(model, m, schedule);
  if (m > 1) {
    ASSERT_EQ(pip.plan.pipeline.microbatches, m);
    ASSERT_EQ(pip.plan.pipeline.schedule, schedule);
  }
  ir::Interpreter interp(*ref.graph, 0);
  Executor a(ref.plan), b(pip.plan);
  for (int s = 0; s < steps; ++s) {
    auto in = testbatch::inputsFor(ref.plan, s);
    testbatch::feed(a, in);
    testbatch::feed(b, in);
    a.step();
    b.step();
    double want = interp.step(in).at("loss").data[0];
    EXPECT_LE(errorOf(a.loss(), want), 1e-5) << "step " << s;
    EXPECT_LE(errorOf(b.loss(), a.loss()), 1e-5)
        << "step " << s << ": " << b.loss() << " vs " << a.loss();
  }
  for (const plan::TensorRef &t : ref.plan.params) {
    expectClose(readNamed(b, pip.plan.params, t.name), a.readFloats(t), t.name);
    std::vector<float> interpValue;
    for (double v : interp.persistent().at(t.name).data) interpValue.push_back(float(v));
    expectClose(a.readFloats(t), interpValue, t.name + " (interpreter)");
  }
  for (const plan::TensorRef &t : ref.plan.states)
    expectClose(readNamed(b, pip.plan.states, t.name), a.readFloats(t), t.name);
  for (const plan::TensorRef &t : ref.plan.outputs)
    expectClose(readNamed(b, pip.plan.outputs, t.name), a.readFloats(t), t.name);
}

const std::vector<std::string> kFourStages = {"s0", "s1", "s2", "s3"};

/// The four-stage chain (mse) whose w1 lives on s1 and is used again on s3,
/// the same shape in both places: a parameter shared by two stages.
json sharedParameterModel(const std::string &optimizer) {
  json model = chainModel(kFourStages, "mse", optimizer);
  for (json &n : model["nodes"])
    if (n["name"] == "h3") n["inputs"][1] = "w1";
  model["params"]["w1"]["shape"] = {6, 6};
  model["params"].erase("w3");
  model["params"]["b3"]["shape"] = {6};
  model["inputs"]["y"]["shape"] = {kBatch, 6};
  return model;
}

TEST(Pipeline, OneMicrobatchIsTheUnpipelinedPlan) {
  json model = chainModel(kFourStages, "mse", "adam");
  for (const std::string &s : kSchedules)
    EXPECT_EQ(plan::serializePlan(compile(model, 1, s).plan),
              plan::serializePlan(compile(model, 0, "").plan))
        << s;
}

TEST(Pipeline, FourStagesEveryScheduleOptimizerLossAndM) {
  for (const char *loss : {"mse", "xent"})
    for (const char *opt : {"sgd", "adam"})
      for (int64_t m : {1, 3, 4, 8})
        for (const std::string &s : kSchedules) {
          SCOPED_TRACE(std::string(loss) + " " + opt);
          expectSameTraining(chainModel(kFourStages, loss, opt), m, s);
        }
}

TEST(Pipeline, ParameterUsedByTwoStages) {
  json model = sharedParameterModel("adam");
  for (const std::string &s : kSchedules)
    for (int64_t m : {3, 8}) expectSameTraining(model, m, s);
}

TEST(Pipeline, UnevenStages) {
  for (const std::string &s : kSchedules)
    for (int64_t m : {2, 4, 6})
      expectSameTraining(chainModel({"a", "a", "a", "b", "c", "c"}, "xent", "sgd"), m, s);
}

TEST(Pipeline, LossOnAMiddleDevice) {
  for (const std::string &s : kSchedules)
    for (int64_t m : {2, 3, 6})
      expectSameTraining(chainModel({"a", "b", "c"}, "mse", "adam", "b"), m, s);
}

TEST(Pipeline, InterleavedChunks) {
  // Four chunks over two devices: virtual stages 0..3, two per device.
  json model = chainModel({"a", "b", "a", "b"}, "xent", "adam");
  for (const std::string &s : kSchedules)
    for (int64_t m : {1, 2, 4, 8}) expectSameTraining(model, m, s);
  Compiled c = compile(model, 4, "interleaved-1f1b");
  EXPECT_EQ(c.plan.pipeline.stages.size(), 4u);
}

/// A pipelined plan whose stages share threads (any number of threads, up
/// to one per device) trains bit for bit as with a thread per device: each
/// device still runs its list in order, only the interleaving differs.
TEST(Pipeline, DevicesSharingThreadsTrainBitForBit) {
  json model = chainModel(kFourStages, "xent", "adam");
  for (const std::string &schedule : kSchedules) {
    SCOPED_TRACE(schedule);
    Compiled c = compile(model, 4, schedule);
    std::map<unsigned, std::vector<float>> losses, params;
    for (unsigned threads : {4u, 1u, 2u, 3u}) {
      Executor ex(c.plan, cpuBackendFactory(), nullptr, {}, threads);
      ASSERT_EQ(ex.numThreads(), threads);
      for (int s = 0; s < 4; ++s) {
        testbatch::feed(ex, testbatch::inputsFor(c.plan, s));
        ex.step();
        losses[threads].push_back(ex.loss());
      }
      for (const plan::TensorRef &t : c.plan.params)
        for (float v : ex.readFloats(t)) params[threads].push_back(v);
      EXPECT_EQ(losses[threads], losses[4]);
      EXPECT_EQ(params[threads], params[4]);
    }
  }
}

/// Overlapped steps (Executor::runSteps: a stage starts its next step while
/// later stages finish this one) train bit for bit as single steps, under
/// every schedule and thread count: the hooks feed each device its inputs
/// as it starts a step and read the loss as the loss's device ends one.
TEST(Pipeline, OverlappedStepsTrainBitForBit) {
  json model = chainModel(kFourStages, "xent", "adam");
  for (const std::string &schedule : kSchedules) {
    SCOPED_TRACE(schedule);
    Compiled c = compile(model, 4, schedule);
    std::vector<float> wantLosses, wantParams;
    {
      Executor ex(c.plan);
      for (int s = 0; s < 5; ++s) {
        testbatch::feed(ex, testbatch::inputsFor(c.plan, s));
        ex.step();
        wantLosses.push_back(ex.loss());
      }
      for (const plan::TensorRef &t : c.plan.params)
        for (float v : ex.readFloats(t)) wantParams.push_back(v);
    }
    for (unsigned threads : {4u, 1u, 2u}) {
      SCOPED_TRACE(threads);
      Executor ex(c.plan, cpuBackendFactory(), nullptr, {}, threads);
      std::vector<float> losses, params;
      Executor::StepHooks hooks;
      hooks.before = [&](uint32_t d, int64_t step) {
        testbatch::feed(ex, testbatch::inputsFor(c.plan, int(step - 1)), d);
      };
      hooks.after = [&](uint32_t d, int64_t) {
        if (d == c.plan.loss.device) losses.push_back(ex.loss());
      };
      ex.runSteps(2, hooks);
      ex.runSteps(3, hooks);
      for (const plan::TensorRef &t : c.plan.params)
        for (float v : ex.readFloats(t)) params.push_back(v);
      EXPECT_EQ(std::memcmp(losses.data(), wantLosses.data(), 4 * wantLosses.size()), 0);
      ASSERT_EQ(params.size(), wantParams.size());
      EXPECT_EQ(std::memcmp(params.data(), wantParams.data(), 4 * params.size()), 0);
    }
  }
}

/// Forward actions minus backward actions seen so far, per stage device.
TEST(Pipeline, OneFOneBBoundsMicrobatchesInFlight) {
  const int64_t p = 4, m = 8;
  for (const std::string &s : {std::string("gpipe"), std::string("1f1b")}) {
    Compiled c = compile(chainModel(kFourStages, "mse", "sgd"), m, s);
    for (size_t d = 0; d < c.plan.devices.size(); ++d) {
      std::set<int> forwards, backwards;
      size_t peak = 0;
      for (const plan::Instr &in : c.plan.devices[d].instrs) {
        if (in.action.kind == plan::Action::Forward) forwards.insert(in.action.microbatch);
        if (in.action.kind == plan::Action::Backward) backwards.insert(in.action.microbatch);
        peak = std::max(peak, forwards.size() - std::min(forwards.size(), backwards.size()));
      }
      EXPECT_EQ(forwards.size(), size_t(m)) << c.plan.devices[d].device;
      if (s == "1f1b") EXPECT_LE(peak, size_t(p) - d) << "stage " << d;
      else EXPECT_EQ(peak, size_t(m)) << "stage " << d;
    }
  }
}

/// Trains `model` under 1F1B and under `schedule` (with `recompute`, and an
/// in-flight bound) with M micro-batches; every loss and every parameter and
/// state are the same bits.
void expectBitIdenticalTo1F1B(const json &model, int64_t m, const std::string &schedule,
                              const std::string &recompute = "", int64_t inFlight = 0) {
  SCOPED_TRACE("M=" + std::to_string(m) + " schedule=" + schedule + " recompute=" + recompute +
               " in-flight=" + std::to_string(inFlight));
  Compiled ref = compile(model, m, "1f1b");
  Compiled zb = compile(model, m, schedule, recompute, inFlight);
  Executor a(ref.plan), b(zb.plan);
  for (int s = 0; s < 3; ++s) {
    auto in = testbatch::inputsFor(ref.plan, s);
    testbatch::feed(a, in);
    testbatch::feed(b, in);
    a.step();
    b.step();
    float la = a.loss(), lb = b.loss();
    EXPECT_EQ(std::memcmp(&la, &lb, sizeof la), 0) << "step " << s << ": " << lb << " vs " << la;
  }
  for (const auto *list : {&ref.plan.params, &ref.plan.states})
    for (const plan::TensorRef &t : *list) {
      const auto &other = list == &ref.plan.params ? zb.plan.params : zb.plan.states;
      std::vector<float> got = readNamed(b, other, t.name), want = a.readFloats(t);
      ASSERT_EQ(got.size(), want.size()) << t.name;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << t.name;
    }
}

/// A two-stage model with batch_norm (training statistics, running
/// statistics updated per micro-batch) and dropout.
json batchNormDropoutModel() {
  return json::parse(R"({
    "mpc": 1, "name": "bn_dropout",
    "inputs": {"x": {"shape": [24, 6]}, "y": {"shape": [24, 3]}},
    "params": {
      "w0": {"shape": [6, 6], "init": {"xavier": {"magnitude": 2.0}}, "device": "a"},
      "g": {"shape": [6], "init": "ones", "device": "a"},
      "be": {"shape": [6], "init": "zeros", "device": "a"},
      "w1": {"shape": [6, 3], "init": {"xavier": {"magnitude": 2.0}}, "device": "b"}
    },
    "nodes": [
      {"name": "h0", "op": "matmul", "inputs": ["x", "w0"], "device": "a"},
      {"name": "n0", "op": "batch_norm", "inputs": ["h0", "g", "be"], "device": "a"},
      {"name": "a0", "op": "tanh", "inputs": ["n0"], "device": "a"},
      {"name": "d0", "op": "dropout", "inputs": ["a0"], "attrs": {"p": 0.25}, "device": "b"},
      {"name": "h1", "op": "matmul", "inputs": ["d0", "w1"], "device": "b"},
      {"name": "loss", "op": "mse_loss", "inputs": ["h1", "y"], "device": "b"}
    ],
    "loss": "loss", "outputs": ["h1"],
    "optimizer": {"adam": {"lr": 0.01}}
  })");
}

TEST(Pipeline, ZeroBubbleIsBitIdenticalTo1F1B) {
  json shared = sharedParameterModel("sgd");
  for (const char *schedule : {"zb-h1", "zb-h2"}) {
    for (const char *opt : {"sgd", "adam"})
      for (int64_t m : {1, 3, 4, 8}) // 1, p - 1, p, 2p
        expectBitIdenticalTo1F1B(chainModel(kFourStages, "xent", opt), m, schedule);
    for (int64_t m : {1, 3, 4, 8}) expectBitIdenticalTo1F1B(shared, m, schedule);
    for (int64_t m : {1, 2, 4}) // p = 2
      expectBitIdenticalTo1F1B(batchNormDropoutModel(), m, schedule);
    // Every micro-batch in flight: the later stages put all their W off.
    for (const char *opt : {"sgd", "adam"})
      expectBitIdenticalTo1F1B(chainModel(kFourStages, "xent", opt), 8, schedule, "", 8);
    expectBitIdenticalTo1F1B(shared, 8, schedule, "", 8);
    expectBitIdenticalTo1F1B(batchNormDropoutModel(), 4, schedule, "", 4);
  }
}

// Recomputation changes when activations are computed, never what: every
// level under every schedule trains bit for bit as plain 1F1B, with dropout
// (the copy draws the original's mask) and batch_norm.
TEST(Pipeline, RecomputeIsBitIdentical) {
  json shared = sharedParameterModel("sgd");
  for (const char *level : {"selective", "full"})
    for (const char *schedule : {"1f1b", "gpipe", "zb-h1", "zb-h2"}) {
      for (int64_t m : {1, 3, 4, 8}) { // 1, p - 1, p, 2p
        expectBitIdenticalTo1F1B(chainModel(kFourStages, "xent", "adam"), m, schedule, level);
        expectBitIdenticalTo1F1B(chainModel(kFourStages, "mse", "sgd"), m, schedule, level);
        expectBitIdenticalTo1F1B(shared, m, schedule, level);
      }
      for (int64_t m : {1, 2, 4})
        expectBitIdenticalTo1F1B(batchNormDropoutModel(), m, schedule, level);
    }
  // The copies exist, are backward nodes, and the backward reads them.
  Compiled c = compile(batchNormDropoutModel(), 2, "1f1b", "full");
  size_t copies = 0;
  for (const auto &n : c.graph->nodes())
    if (n->backward && n->name.find(".recompute") != std::string::npos) ++copies;
  EXPECT_GT(copies, 0u);
}

/// GPipe holds every micro-batch's activations until its backward; with
/// --recompute=full a stage keeps only its inputs, so stage 0 (whose input
/// is the model's) needs at most a third of the arena (p = 4, M = 16).
TEST(Pipeline, FullRecomputeCutsStageZeroArena) {
  const int64_t layers = 8, width = 64, batch = 512;
  json m = {{"mpc", 1}, {"name", "deep"}};
  m["inputs"]["x"] = {{"shape", {batch, width}}};
  m["inputs"]["y"] = {{"shape", {batch, width}}};
  json nodes = json::array();
  std::string cur = "x";
  for (int64_t l = 0; l < layers; ++l) {
    std::string w = "w" + std::to_string(l), h = "h" + std::to_string(l),
                a = "a" + std::to_string(l), dev = "s" + std::to_string(l * 4 / layers);
    m["params"][w] = {{"shape", {width, width}}, {"init", {{"xavier", {{"magnitude", 1.0}}}}},
                      {"device", dev}};
    nodes.push_back({{"name", h}, {"op", "matmul"}, {"inputs", {cur, w}}, {"device", dev}});
    nodes.push_back({{"name", a}, {"op", "tanh"}, {"inputs", {h}}, {"device", dev}});
    cur = a;
  }
  nodes.push_back({{"name", "loss"}, {"op", "mse_loss"}, {"inputs", {cur, "y"}}});
  m["nodes"] = nodes;
  m["loss"] = "loss";
  m["optimizer"] = optimizerJson("sgd");
  uint64_t kept = compile(m, 16, "gpipe").plan.devices[0].arenaBytes;
  uint64_t recomputed = compile(m, 16, "gpipe", "full").plan.devices[0].arenaBytes;
  EXPECT_LE(recomputed * 3, kept) << recomputed << " vs " << kept;
}

/// Micro-batches open on each stage device (forward begun, the last of its
/// backward actions on that device not yet): at most p on every stage under
/// zb-h1 (1F1B's first stage's bound), where the later stages do hold W
/// actions back (more open than 1F1B's p - s); at most 2p - 1 under zb-h2.
/// B and W actions both appear.
/// The most micro-batches open at once on device `d` of `plan` (forward
/// begun, the last of its backward actions there not yet); counts the
/// device's W actions into `weightGrads`.
size_t openPeak(const plan::Plan &plan, size_t d, size_t &weightGrads) {
  const auto &instrs = plan.devices[d].instrs;
  std::set<int> hasW;
  for (const plan::Instr &in : instrs)
    if (in.action.kind == plan::Action::WeightGrad) hasW.insert(in.action.microbatch);
  weightGrads += hasW.size();
  std::set<int> open;
  size_t peak = 0;
  for (const plan::Instr &in : instrs) {
    const plan::Action &a = in.action;
    if (a.kind == plan::Action::Forward) open.insert(a.microbatch);
    if (a.kind == plan::Action::WeightGrad ||
        (a.kind == plan::Action::Backward && !hasW.count(a.microbatch)))
      open.erase(a.microbatch);
    peak = std::max(peak, open.size());
  }
  EXPECT_TRUE(open.empty());
  return peak;
}

TEST(Pipeline, ZeroBubbleBoundsOpenMicrobatches) {
  const int64_t p = 4, m = 8;
  for (const std::string &s : {std::string("zb-h1"), std::string("zb-h2")}) {
    Compiled c = compile(chainModel(kFourStages, "mse", "adam"), m, s);
    size_t weightGrads = 0;
    for (size_t d = 0; d < c.plan.devices.size(); ++d) {
      SCOPED_TRACE(s + " stage " + std::to_string(d));
      size_t peak = openPeak(c.plan, d, weightGrads);
      EXPECT_LE(peak, s == "zb-h1" ? size_t(p) : size_t(2 * p - 1));
      if (s == "zb-h1" && d > 0) {
        EXPECT_GT(peak, size_t(p) - d);
      }
    }
    EXPECT_EQ(weightGrads, size_t(p * m)) << s;
  }
}

/// --in-flight raises a zero-bubble schedule's bound: no stage holds more,
/// and the last stage, which runs each B right after its F, then holds
/// more than the schedule's own bound lets it, its W put off.
TEST(Pipeline, InFlightRaisesTheZeroBubbleBound) {
  const int64_t p = 4, m = 8;
  for (const std::string &s : {std::string("zb-h1"), std::string("zb-h2")}) {
    const size_t own = s == "zb-h1" ? size_t(p) : size_t(2 * p - 1);
    Compiled c = compile(chainModel(kFourStages, "mse", "adam"), m, s, "", m);
    EXPECT_EQ(c.plan.pipeline.inFlight, m);
    size_t weightGrads = 0;
    for (size_t d = 0; d < c.plan.devices.size(); ++d) {
      SCOPED_TRACE(s + " stage " + std::to_string(d));
      size_t peak = openPeak(c.plan, d, weightGrads);
      EXPECT_LE(peak, size_t(m));
      if (d == c.plan.devices.size() - 1) {
        EXPECT_GT(peak, own);
      }
    }
    EXPECT_EQ(weightGrads, size_t(p * m)) << s;
  }
}

TEST(Pipeline, OneFOneBUsesLessArenaThanGPipe) {
  json model = chainModel(kFourStages, "mse", "sgd");
  uint64_t gpipe = compile(model, 8, "gpipe").plan.devices[0].arenaBytes;
  uint64_t ofob = compile(model, 8, "1f1b").plan.devices[0].arenaBytes;
  EXPECT_LT(ofob, gpipe);
}

TEST(Pipeline, ConvNetMicrobatches) {
  // conv2d, the pools and flatten keep axis 0 as the batch; the weight
  // gradients (conv2d_grad_weight, and the bias' sum) add up over the
  // micro-batches.
  json model = json::parse(R"({
    "mpc": 1, "name": "cnn_mb",
    "inputs": {"x": {"shape": [4, 2, 7, 7]}, "labels": {"shape": [4], "dtype": "i32"}},
    "params": {
      "w1": {"shape": [4, 2, 3, 3], "init": {"xavier": {"magnitude": 2.0}}, "device": "a"},
      "b1": {"shape": [4], "init": {"constant": 0.1}, "device": "a"},
      "w2": {"shape": [36, 3], "init": {"xavier": {"magnitude": 2.0}}, "device": "b"}
    },
    "nodes": [
      {"name": "c", "op": "conv2d", "inputs": ["x", "w1", "b1"],
       "attrs": {"stride": [2, 2], "padding": [1, 1]}, "device": "a"},
      {"name": "r", "op": "relu", "inputs": ["c"]},
      {"name": "p", "op": "avg_pool2d", "inputs": ["r"],
       "attrs": {"kernel": [2, 2], "stride": [1, 1], "padding": [1, 1]}},
      {"name": "m", "op": "max_pool2d", "inputs": ["p"],
       "attrs": {"kernel": [2, 2], "ceil_mode": true}, "device": "b"},
      {"name": "f", "op": "flatten", "inputs": ["m"]},
      {"name": "h", "op": "matmul", "inputs": ["f", "w2"]},
      {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["h", "labels"]}
    ],
    "loss": "loss", "outputs": ["h"],
    "optimizer": {"sgd": {"lr": 0.1}}
  })");
  for (const std::string &s : kSchedules)
    for (int64_t m : {2, 4}) expectSameTraining(model, m, s);
}

TEST(Pipeline, BatchAxisErrors) {
  auto message = [](const json &model, int64_t m) -> std::string {
    try {
      compile(model, m, "1f1b");
    } catch (const UserError &e) {
      return e.what();
    }
    return "no error";
  };
  json model = chainModel({"a", "b"}, "mse", "sgd");
  EXPECT_NE(message(model, 5).find("5 micro-batches do not divide the batch of 24 rows"),
            std::string::npos)
      << message(model, 5);
  json t = model;
  t["nodes"][0]["attrs"] = {{"transpose_a", true}};
  t["inputs"]["x"]["shape"] = {6, kBatch};
  t["params"]["w0"]["shape"] = {6, 6};
  EXPECT_NE(message(t, 2).find("every input's axis 0 must be the batch"), std::string::npos)
      << message(t, 2);
}

} // namespace
} // namespace mpc::runtime
