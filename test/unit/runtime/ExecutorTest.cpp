//===- test/unit/runtime/ExecutorTest.cpp - workers, transfers, errors --===//
//
// Hand-built two-device plans: a value computed on one device reaches the
// other through a send/recv pair (a copy, not shared memory); an error on
// one device while the other waits in a recv stops both and surfaces as the
// UserError, without hanging; the executor refuses to continue afterwards.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"
#include "plan/PlanIO.h"
#include "runtime/Executor.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sched.h>

namespace mpc::runtime {
namespace {

struct PlanBuilder {
  plan::Plan p;
  uint32_t device(const std::string &name) {
    plan::DeviceProgram d;
    d.device = name;
    p.devices.push_back(d);
    return uint32_t(p.devices.size() - 1);
  }
  uint32_t buffer(uint32_t dev, const std::string &name, plan::DType dt,
                  std::vector<int64_t> shape, plan::Region region) {
    plan::DeviceProgram &d = p.devices[dev];
    plan::Buffer b;
    b.id = uint32_t(d.buffers.size());
    b.name = name;
    b.dtype = dt;
    b.shape = std::move(shape);
    b.region = region;
    b.bytes = uint64_t(b.numElements()) * 4;
    uint64_t &top = region == plan::Region::Persistent ? d.persistentBytes : d.arenaBytes;
    b.offset = top;
    top += (b.bytes + 63) / 64 * 64;
    d.noReuseBytes = d.arenaBytes;
    d.buffers.push_back(b);
    return b.id;
  }
  void kernel(uint32_t dev, const std::string &op, std::vector<uint32_t> in, uint32_t out,
              plan::AttrMap attrs = {}) {
    plan::Instr i;
    i.kind = plan::InstrKind::Kernel;
    i.op = op;
    i.inputs = std::move(in);
    i.output = out;
    i.attrs = std::move(attrs);
    i.node = p.devices[dev].buffers[out].name;
    p.devices[dev].instrs.push_back(i);
  }
  void transfer(uint32_t from, uint32_t fromBuf, uint32_t to, uint32_t toBuf, uint32_t channel) {
    plan::Instr s;
    s.kind = plan::InstrKind::Send;
    s.inputs = {fromBuf};
    s.peer = to;
    s.channel = channel;
    s.node = p.devices[to].buffers[toBuf].name;
    p.devices[from].instrs.push_back(s);
    plan::Instr r;
    r.kind = plan::InstrKind::Recv;
    r.output = toBuf;
    r.peer = from;
    r.channel = channel;
    r.node = s.node;
    p.devices[to].instrs.push_back(r);
  }
  plan::TensorRef ref(uint32_t dev, uint32_t buf) {
    const plan::Buffer &b = p.devices[dev].buffers[buf];
    return plan::TensorRef{b.name, b.dtype, b.shape, dev, buf, {}, {}};
  }
};

/// cpu:0: h = scale(x, 2) -> cpu:1: z = exp(h). Optionally a cross-entropy
/// with labels on cpu:0 before the send (to inject a data error).
plan::Plan twoDevicePlan(bool withLabels, int64_t n = 4) {
  PlanBuilder b;
  uint32_t d0 = b.device("cpu:0"), d1 = b.device("cpu:1");
  uint32_t x = b.buffer(d0, "x", plan::DType::F32, {n}, plan::Region::Persistent);
  uint32_t h = b.buffer(d0, "h", plan::DType::F32, {n}, plan::Region::Arena);
  b.p.inputs.push_back(b.ref(d0, x));
  if (withLabels) {
    uint32_t logits = b.buffer(d0, "logits", plan::DType::F32, {2, 2}, plan::Region::Arena);
    uint32_t labels = b.buffer(d0, "labels", plan::DType::I32, {2}, plan::Region::Persistent);
    uint32_t ce = b.buffer(d0, "ce", plan::DType::F32, {}, plan::Region::Persistent);
    b.kernel(d0, "reshape", {x}, logits, {{"shape", std::vector<int64_t>{2, 2}}});
    b.kernel(d0, "softmax_cross_entropy", {logits, labels}, ce,
             {{"ignore_index", int64_t(-100)}, {"reduction", std::string("mean")}});
    b.p.inputs.push_back(b.ref(d0, labels));
  }
  b.kernel(d0, "scale", {x}, h, {{"value", 2.0}});
  uint32_t h1 = b.buffer(d1, "h.to.cpu1", plan::DType::F32, {n}, plan::Region::Arena);
  uint32_t z = b.buffer(d1, "z", plan::DType::F32, {n}, plan::Region::Persistent);
  b.transfer(d0, h, d1, h1, 0);
  b.kernel(d1, "exp", {h1}, z);
  b.p.outputs.push_back(b.ref(d1, z));
  codegen::fillOpTable(b.p); // as the lowering does
  return b.p;
}

/// Three steps of twoDevicePlan(false): z = exp(2 x) arrives on cpu:1.
void expectThreeTransfers(Executor &ex) {
  std::vector<float> x = {0, 0.5f, -1, 1};
  for (int step = 0; step < 3; ++step) {
    x[0] = float(step);
    ex.write(*ex.findInput("x"), x.data(), 16);
    ex.step();
    std::vector<float> z = ex.readFloats(*ex.findOutput("z"));
    for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(z[i], float(std::exp(2.0 * x[i])));
  }
}

TEST(Executor, TransfersBetweenDevices) {
  plan::Plan p = twoDevicePlan(false);
  ASSERT_TRUE(plan::verifyPlan(p).empty()) << plan::verifyPlan(p).front();
  Executor ex(p, cpuBackendFactory(), nullptr, {}, 2);
  EXPECT_EQ(ex.numDevices(), 2u);
  expectThreeTransfers(ex);
  DeviceStats s = ex.stats();
  EXPECT_EQ(s.bytesSent, 3u * 16);
  EXPECT_EQ(s.bytesReceived, 3u * 16);
  EXPECT_EQ(ex.instructionsPerStep(), 4u);
}

/// A good step, then a label out of range on cpu:0 while cpu:1 waits for
/// its message, on `threads` threads: the executor must wake cpu:1 (closing
/// the channels) and report cpu:0's error, then refuse to go on.
void expectLabelErrorStopsBoth(unsigned threads) {
  plan::Plan p = twoDevicePlan(true);
  ASSERT_TRUE(plan::verifyPlan(p).empty()) << plan::verifyPlan(p).front();
  Executor ex(p, cpuBackendFactory(), nullptr, {}, threads);
  std::vector<float> x = {0, 0.5f, -1, 1};
  std::vector<int32_t> good = {0, 1}, bad = {0, 5};
  ex.write(*ex.findInput("x"), x.data(), 16);
  ex.write(*ex.findInput("labels"), good.data(), 8);
  ex.step();
  ex.write(*ex.findInput("labels"), bad.data(), 8);
  try {
    ex.step();
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.where(), "device cpu:0, instruction 1 (softmax_cross_entropy 'ce')");
    EXPECT_EQ(e.message(), "label 5 out of range [0, 2) at row 1");
  }
  EXPECT_THROW(ex.step(), UserError);
}

TEST(Executor, ErrorOnOneDeviceStopsAllWithoutHanging) { expectLabelErrorStopsBoth(2); }

/// The failing device shares its thread with the one that waits for it.
TEST(Executor, ErrorOnASharedThreadStopsWithoutHanging) { expectLabelErrorStopsBoth(1); }

TEST(Executor, ThreadsAreCappedByDevices) {
  plan::Plan p = twoDevicePlan(false);
  EXPECT_EQ(Executor(p, cpuBackendFactory(), nullptr, {}, 1).numThreads(), 1u);
  EXPECT_EQ(Executor(p, cpuBackendFactory(), nullptr, {}, 2).numThreads(), 2u);
  EXPECT_EQ(Executor(p, cpuBackendFactory(), nullptr, {}, 8).numThreads(), 2u);
  // By default, a plan doing little work per message runs on one thread...
  EXPECT_EQ(Executor(p).numThreads(), 1u);
  // ... and one doing more gets a thread per device, cores permitting (each
  // kernel reads and writes 2 x 64Ki elements per message here).
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(Executor(twoDevicePlan(false, 1 << 16)).numThreads(),
            std::min<size_t>(2, size_t(CPU_COUNT(&set))));
  // One hosted device: one thread, whatever is asked.
  EXPECT_EQ(Executor(p, cpuBackendFactory(), nullptr, {true, false}, 2).numThreads(), 1u);
}

TEST(Executor, DevicesSharingAThreadExchangeMessages) {
  plan::Plan p = twoDevicePlan(false);
  Executor ex(p, cpuBackendFactory(), nullptr, {}, 1);
  expectThreeTransfers(ex);
  EXPECT_EQ(ex.stats().bytesReceived, 3u * 16);
}

TEST(Executor, ManyStepsAreDeterministic) {
  plan::Plan p = twoDevicePlan(false);
  std::vector<float> last[2];
  for (int run = 0; run < 2; ++run) {
    Executor ex(p, cpuBackendFactory(), nullptr, {}, 2);
    std::vector<float> x = {0.1f, 0.2f, 0.3f, 0.4f};
    for (int step = 0; step < 200; ++step) {
      ex.write(*ex.findInput("x"), x.data(), 16);
      ex.step();
    }
    last[run] = ex.readFloats(*ex.findOutput("z"));
  }
  EXPECT_EQ(last[0], last[1]);
}

/// Overlapped steps (runSteps) on `threads` threads: the hooks feed x per
/// device and read z as cpu:1 ends each step; every z equals what single
/// steps give, and no device starts step s before every device has finished
/// step s - 2.
void expectOverlappedStepsMatch(unsigned threads) {
  plan::Plan p = twoDevicePlan(false);
  auto xOf = [](int64_t step) {
    return std::vector<float>{float(step % 5), 0.5f, -1, float(step % 3) * 0.25f};
  };
  std::vector<std::vector<float>> want;
  {
    Executor ex(p, cpuBackendFactory(), nullptr, {}, threads);
    for (int64_t step = 1; step <= 7; ++step) {
      ex.write(*ex.findInput("x"), xOf(step).data(), 16);
      ex.step();
      want.push_back(ex.readFloats(*ex.findOutput("z")));
    }
  }
  Executor ex(p, cpuBackendFactory(), nullptr, {}, threads);
  ASSERT_TRUE(ex.canOverlapSteps());
  std::vector<std::vector<float>> got;
  std::atomic<int64_t> finished[2] = {0, 0}; // steps each device ended
  std::atomic<bool> windowKept{true};
  std::vector<int64_t> started[2];
  Executor::StepHooks hooks;
  hooks.before = [&](uint32_t d, int64_t step) {
    started[d].push_back(step);
    for (auto &f : finished)
      if (f.load() < step - 2) windowKept = false;
    ex.writeTo(d, *ex.findInput("x"), xOf(step).data(), 16);
  };
  hooks.after = [&](uint32_t d, int64_t step) {
    if (d == 1) got.push_back(ex.readFloats(*ex.findOutput("z")));
    EXPECT_EQ(finished[d].fetch_add(1) + 1, step);
  };
  ex.runSteps(3, hooks); // steps 1-3
  ex.runSteps(4, hooks); // 4-7: a run continues the numbering
  EXPECT_EQ(got, want);
  EXPECT_TRUE(windowKept);
  for (auto &s : started) EXPECT_EQ(s, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(ex.nextStep(), 8);
}

TEST(Executor, OverlappedStepsMatchSingleSteps) { expectOverlappedStepsMatch(2); }
TEST(Executor, OverlappedStepsOnASharedThread) { expectOverlappedStepsMatch(1); }

/// `count` overlapped steps of `ex` stop with a UserError saying `message`,
/// and failedStep() is `step`.
void expectRunFails(Executor &ex, int64_t count, const Executor::StepHooks &hooks,
                    const std::string &message, int64_t step) {
  try {
    ex.runSteps(count, hooks);
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), message);
    EXPECT_EQ(ex.failedStep(), step);
  }
}

/// An error in the third of five overlapped steps stops every device without
/// hanging, names its step (failedStep), and the executor refuses to go on;
/// so does an error thrown by a hook.
TEST(Executor, OverlappedStepErrorsStopTheRun) {
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    plan::Plan p = twoDevicePlan(true);
    Executor ex(p, cpuBackendFactory(), nullptr, {}, threads);
    std::vector<float> x = {0, 0.5f, -1, 1};
    std::vector<int32_t> good = {0, 1}, bad = {0, 5};
    Executor::StepHooks hooks;
    hooks.before = [&](uint32_t d, int64_t step) {
      if (d != 0) return;
      ex.writeTo(0, *ex.findInput("x"), x.data(), 16);
      ex.writeTo(0, *ex.findInput("labels"), (step == 3 ? bad : good).data(), 8);
    };
    expectRunFails(ex, 5, hooks, "label 5 out of range [0, 2) at row 1", 3);
    EXPECT_THROW(ex.runSteps(2), UserError);

    Executor again(p, cpuBackendFactory(), nullptr, {}, threads);
    Executor::StepHooks throwing;
    throwing.after = [&](uint32_t d, int64_t step) {
      if (d == 1 && step == 2) throw UserError("", "step 2", "stop here");
    };
    again.write(*again.findInput("x"), x.data(), 16);
    again.write(*again.findInput("labels"), good.data(), 8);
    expectRunFails(again, 6, throwing, "stop here", 2);
  }
}

TEST(Executor, DeadlockingPlanRejectedAtLoad) {
  // Each device waits for the other before sending: a plan that would hang.
  PlanBuilder b;
  uint32_t d0 = b.device("cpu:0"), d1 = b.device("cpu:1");
  uint32_t a0 = b.buffer(d0, "a", plan::DType::F32, {1}, plan::Region::Persistent);
  uint32_t r0 = b.buffer(d0, "r", plan::DType::F32, {1}, plan::Region::Arena);
  uint32_t a1 = b.buffer(d1, "c", plan::DType::F32, {1}, plan::Region::Persistent);
  uint32_t r1 = b.buffer(d1, "d", plan::DType::F32, {1}, plan::Region::Arena);
  plan::Instr recv0{plan::InstrKind::Recv, "", {}, {}, r0, 1, 1, "r", {}, {}};
  plan::Instr send0{plan::InstrKind::Send, "", {}, {a0}, 0, 0, 1, "d", {}, {}};
  plan::Instr recv1{plan::InstrKind::Recv, "", {}, {}, r1, 0, 0, "d", {}, {}};
  plan::Instr send1{plan::InstrKind::Send, "", {}, {a1}, 0, 1, 0, "r", {}, {}};
  b.p.devices[d0].instrs = {recv0, send0};
  b.p.devices[d1].instrs = {recv1, send1};
  try {
    Executor ex(b.p);
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.where(), "device cpu:0, instruction 0 (recv 'r')");
    EXPECT_EQ(e.message(),
              "the plan deadlocks: this receive on channel 1 waits for a send that never comes");
  }
}

} // namespace
} // namespace mpc::runtime

namespace mpc::runtime {
namespace {

// Traced spans convert ticks on the line through two anchors: continuous and
// increasing across takes (a device's slices never overlap between steps),
// and near the steady clock at every anchor, however long the run.
TEST(TraceTicks, ConversionIsIncreasingAcrossAnchorsAndMatchesTheClock) {
  TraceTicks ticks;
  ticks.start();
  int64_t lastNs = INT64_MIN;
  for (int take = 0; take < 20; ++take) {
    std::vector<uint64_t> recorded;
    for (int i = 0; i < 50; ++i) {
      recorded.push_back(traceTicks());
      // Some time between readings, more in some takes than in others.
      int64_t until = traceClockNs() + 2000 * (take % 3 + 1);
      while (traceClockNs() < until) {
      }
    }
    ticks.advance();
    int64_t now = traceClockNs();
    for (uint64_t t : recorded) {
      int64_t ns = ticks.toNs(t);
      EXPECT_GE(ns, lastNs) << "take " << take;
      lastNs = ns;
    }
    // The last tick recorded converts to a time before the anchor's read.
    EXPECT_LE(lastNs, now + 1000) << "take " << take;
  }
}

} // namespace
} // namespace mpc::runtime
