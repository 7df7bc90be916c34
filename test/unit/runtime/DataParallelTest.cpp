//===- test/unit/runtime/DataParallelTest.cpp - replicas stay identical ---===//
//
// After training steps, every data-parallel replica's copy of every parameter
// and optimizer state (plan::TensorRef::mirrors) holds the same bits as
// replica 0's: each replica updates from the same all-reduced gradient. Also
// pipelined (M = 2) and over three replicas, and on one thread and several.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

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

} // namespace
} // namespace mpc
