//===- test/unit/runtime/DataParallelTest.cpp - replicas stay identical ---===//
//
// After training steps, every data-parallel replica's copy of every parameter
// and optimizer state (plan::TensorRef::mirrors) holds the same bits as
// replica 0's: each replica updates from the same all-reduced gradient. Also
// pipelined (M = 2) and over three replicas, and on one thread and several.
// Under ZeRO-1 (--zero=1) each replica holds 1/R of the optimizer state, and
// training gives the bits of plain data parallelism.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "ops/Shard.h"
#include "runtime/Executor.h"
#include "test/unit/runtime/TrainOnRandomInputs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <algorithm>
#include <memory>
#include <random>
#include <set>

namespace mpc {
namespace {

const char *kModel = R"({"mpc": 1, "name": "mlp",
 "inputs": {"x": {"shape": [24, 8]}, "y": {"shape": [24, 1]}},
 "params": {
   "w0": {"shape": [8, 16], "init": {"xavier": {"magnitude": 2.0}}, "device": "cpu:0"},
   "w1": {"shape": [16, 16], "init": {"xavier": {"magnitude": 2.0}}, "device": "cpu:1"},
   "w2": {"shape": [16, 1], "init": {"xavier": {"magnitude": 2.0}}, "device": "cpu:1"}},
 "nodes": [
   {"name": "h0", "op": "matmul", "inputs": ["x", "w0"], "device": "cpu:0"},
   {"name": "a0", "op": "tanh", "inputs": ["h0"]},
   {"name": "h1", "op": "matmul", "inputs": ["a0", "w1"], "device": "cpu:1"},
   {"name": "a1", "op": "tanh", "inputs": ["h1"]},
   {"name": "h2", "op": "matmul", "inputs": ["a1", "w2"], "device": "cpu:1"},
   {"name": "loss", "op": "mse_loss", "inputs": ["h2", "y"]}],
 "loss": "loss",
 "optimizer": {"adam": {"lr": 0.01}}})";

/// The bytes of one placement of `t`.
std::vector<uint8_t> bytesAt(runtime::Executor &exec, plan::TensorRef t, plan::Placement at) {
  t.device = at.device;
  t.buffer = at.buffer;
  t.mirrors.clear();
  std::vector<uint8_t> out(size_t(t.numElements()) * 4);
  exec.read(t, out.data(), out.size());
  return out;
}

void expectReplicasEqual(int64_t replicas, int64_t microbatches, unsigned threads) {
  SCOPED_TRACE("R = " + std::to_string(replicas) + ", M = " + std::to_string(microbatches) +
               ", threads " + std::to_string(threads));
  passes::PassOptions options;
  options.dataParallel = replicas;
  options.microbatches = microbatches;
  plan::Plan p = compiler::compileModel(kModel, options);
  ASSERT_EQ(p.params.size(), 3u);
  runtime::Executor exec(p, runtime::cpuBackendFactory(), nullptr, {}, threads);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<std::vector<uint8_t>> before;
  for (const plan::TensorRef &t : p.params) before.push_back(bytesAt(exec, t, {t.device, t.buffer}));
  for (int step = 0; step < 6; ++step) {
    for (const plan::TensorRef &t : p.inputs) {
      std::vector<float> v(size_t(t.numElements()));
      for (float &x : v) x = normal(rng);
      exec.write(t, v.data(), v.size() * 4);
    }
    exec.step();
  }
  size_t compared = 0;
  for (const auto *list : {&p.params, &p.states})
    for (const plan::TensorRef &t : *list) {
      ASSERT_EQ(t.mirrors.size(), size_t(replicas - 1)) << t.name;
      std::vector<uint8_t> primary = bytesAt(exec, t, {t.device, t.buffer});
      for (const plan::Placement &m : t.mirrors) {
        EXPECT_NE(m.device, t.device) << t.name;
        EXPECT_EQ(bytesAt(exec, t, m), primary)
            << t.name << " on " << p.devices[m.device].device << " differs from "
            << p.devices[t.device].device;
        ++compared;
      }
    }
  EXPECT_GT(compared, 0u);
  for (size_t i = 0; i < p.params.size(); ++i)
    EXPECT_NE(bytesAt(exec, p.params[i], {p.params[i].device, p.params[i].buffer}), before[i])
        << p.params[i].name << " did not train";
}

TEST(DataParallel, ReplicasStayBitIdentical) {
  expectReplicasEqual(2, 1, 1);
  expectReplicasEqual(2, 1, 4);
  expectReplicasEqual(3, 1, 2);
  expectReplicasEqual(2, 2, 2);
}

using test::trainOnRandomInputs;

/// Bytes of the persistent buffers of optimizer state on each device.
std::vector<uint64_t> stateBytesPerDevice(const plan::Plan &p) {
  std::vector<uint64_t> bytes(p.devices.size(), 0);
  for (const plan::TensorRef &t : p.states) {
    for (const plan::Placement &m : t.placements())
      bytes[m.device] += p.devices[m.device].buffers[m.buffer].bytes;
  }
  return bytes;
}

void expectZeroMatchesPlain(int64_t replicas, int64_t microbatches) {
  SCOPED_TRACE("R = " + std::to_string(replicas) + ", M = " + std::to_string(microbatches));
  passes::PassOptions options;
  options.dataParallel = replicas;
  options.microbatches = microbatches;
  plan::Plan plain = compiler::compileModel(kModel, options);
  options.zero = 1;
  plan::Plan zero = compiler::compileModel(kModel, options);

  // Layout: Adam's m and v in R shards on distinct devices, one per replica,
  // each ceil(n / R) elements; the step counters whole, mirrored.
  ASSERT_EQ(zero.states.size(), plain.states.size());
  size_t sharded = 0;
  for (const plan::TensorRef &t : zero.states) {
    if (t.shape == std::vector<int64_t>{1}) {
      EXPECT_TRUE(t.shards.empty()) << t.name;
      EXPECT_EQ(t.mirrors.size(), size_t(replicas - 1)) << t.name;
      continue;
    }
    ++sharded;
    ASSERT_EQ(t.shards.size(), size_t(replicas)) << t.name;
    EXPECT_TRUE(t.mirrors.empty()) << t.name;
    std::set<uint32_t> devices;
    for (const plan::Placement &m : t.shards) {
      devices.insert(m.device);
      EXPECT_EQ(zero.devices[m.device].buffers[m.buffer].numElements(),
                ops::shardElements(t.numElements(), replicas))
          << t.name;
    }
    EXPECT_EQ(devices.size(), size_t(replicas)) << t.name;
  }
  EXPECT_EQ(sharded, 6u);

  // Memory: per device, the state bytes fall by R, but for the whole step
  // counters and the padding of the last part.
  std::vector<uint64_t> was = stateBytesPerDevice(plain), now = stateBytesPerDevice(zero);
  for (size_t d = 0; d < was.size(); ++d) {
    SCOPED_TRACE(plain.devices[d].device);
    uint64_t counters = 0, padding = 0;
    for (const plan::TensorRef &t : plain.states) {
      bool here = t.device == d;
      for (const plan::Placement &m : t.mirrors) here = here || m.device == d;
      if (!here) continue;
      if (t.shape == std::vector<int64_t>{1}) counters += 4;
      else padding += 4 * uint64_t(replicas * ops::shardElements(t.numElements(), replicas) -
                                   t.numElements());
    }
    EXPECT_GT(was[d], counters);
    EXPECT_EQ(now[d] - counters, (was[d] - counters + padding) / uint64_t(replicas));
  }

  // Training: parameters (every replica's) and whole states are plain data
  // parallelism's, bit for bit.
  auto a = trainOnRandomInputs(plain, 5), b = trainOnRandomInputs(zero, 5);
  for (size_t i = 0; i < plain.params.size(); ++i) {
    const plan::TensorRef &t = zero.params[i];
    std::vector<uint8_t> want = bytesAt(*a, plain.params[i], {plain.params[i].device,
                                                             plain.params[i].buffer});
    EXPECT_EQ(bytesAt(*b, t, {t.device, t.buffer}), want) << t.name;
    for (const plan::Placement &m : t.mirrors) EXPECT_EQ(bytesAt(*b, t, m), want) << t.name;
  }
  for (size_t i = 0; i < plain.states.size(); ++i) {
    const plan::TensorRef &t = plain.states[i];
    auto it = std::find_if(zero.states.begin(), zero.states.end(),
                           [&](const plan::TensorRef &z) { return z.name == t.name; });
    ASSERT_NE(it, zero.states.end()) << t.name;
    std::vector<uint8_t> want(size_t(t.numElements()) * 4), got(want.size());
    a->read(t, want.data(), want.size());
    b->read(*it, got.data(), got.size());
    EXPECT_EQ(got, want) << t.name;
  }
}

TEST(DataParallel, ZeroShardsStateAndMatchesPlainBitForBit) {
  expectZeroMatchesPlain(2, 1);
  expectZeroMatchesPlain(3, 1);
  expectZeroMatchesPlain(2, 2);
}

} // namespace
} // namespace mpc
