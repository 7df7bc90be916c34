//===- test/unit/runtime/TensorParallelTest.cpp - split tensors at runtime -===//
//
// A tensor-parallel plan holds each split parameter and state in parts along
// an axis (plan::TensorRef::shardAxis): writing the whole tensor puts part i
// on device i, reading joins them, with data-parallel replicas' parts as
// mirrors. Training equals the one-device model within 1e-5 relative, and a
// replicated parameter's copies stay equal bit for bit (every device applies
// the same update from the same reduced gradient).
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "runtime/Executor.h"
#include "test/unit/runtime/TrainOnRandomInputs.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace mpc {
namespace {

const char *kModel = R"({"mpc": 1, "name": "tpmlp",
 "inputs": {"x": {"shape": [24, 8]}, "y": {"shape": [24, 8]}},
 "params": {
   "w1": {"shape": [8, 32], "init": {"xavier": {"magnitude": 2.0}}, "device": "mlp", "shard": 1},
   "b1": {"shape": [32], "init": {"uniform": {"low": -0.1, "high": 0.1}}, "device": "mlp", "shard": 0},
   "w2": {"shape": [32, 8], "init": {"xavier": {"magnitude": 2.0}}, "device": "mlp", "shard": 0},
   "b2": {"shape": [8], "init": {"uniform": {"low": -0.1, "high": 0.1}}, "device": "mlp"}},
 "nodes": [
   {"name": "h", "op": "matmul", "inputs": ["x", "w1"], "device": "mlp"},
   {"name": "hb", "op": "add", "inputs": ["h", "b1"]},
   {"name": "a", "op": "gelu", "inputs": ["hb"]},
   {"name": "o", "op": "matmul", "inputs": ["a", "w2"]},
   {"name": "ob", "op": "add", "inputs": ["o", "b2"]},
   {"name": "loss", "op": "mse_loss", "inputs": ["ob", "y"]}],
 "loss": "loss",
 "optimizer": {"adam": {"lr": 0.01}}})";

/// The model without its splits, on one device.
std::string unsplit() {
  std::string s = kModel;
  for (const char *cut : {", \"shard\": 1", ", \"shard\": 0"})
    for (size_t at; (at = s.find(cut)) != std::string::npos;) s.erase(at, std::strlen(cut));
  return s;
}

plan::Plan compileOn(const std::string &devices, int64_t replicas = 1) {
  passes::PassOptions options;
  options.groupMap["mlp"] = devices;
  if (replicas > 1) options.dataParallel = replicas;
  return compiler::compileModel(devices.find('+') == std::string::npos ? unsplit() : kModel,
                                options);
}

const plan::TensorRef &named(const std::vector<plan::TensorRef> &list, const std::string &name) {
  for (const plan::TensorRef &t : list)
    if (t.name == name) return t;
  throw InternalError("no tensor '" + name + "'");
}

TEST(TensorParallel, SplitTensorsWriteAndReadWhole) {
  for (int64_t replicas : {1, 2}) {
    SCOPED_TRACE("replicas " + std::to_string(replicas));
    plan::Plan p = compileOn("cpu:0+cpu:1", replicas);
    const plan::TensorRef &w1 = named(p.params, "w1");
    ASSERT_EQ(w1.shardAxis, 1);
    ASSERT_EQ(w1.shards.size(), 2u);
    ASSERT_EQ(w1.mirrors.size(), size_t(2 * (replicas - 1)));
    EXPECT_EQ(named(p.params, "w2").shardAxis, 0);
    EXPECT_TRUE(named(p.params, "b2").shards.empty());
    runtime::Executor exec(p, runtime::cpuBackendFactory(), nullptr, {}, 2);
    std::vector<float> whole(size_t(w1.numElements()));
    for (size_t i = 0; i < whole.size(); ++i) whole[i] = float(i);
    exec.write(w1, whole.data(), whole.size() * 4);
    std::vector<float> back(whole.size(), -1.0f);
    exec.read(w1, back.data(), back.size() * 4);
    EXPECT_EQ(back, whole);
    // Part i holds columns [16 i, 16 i + 16) of every row of the [8, 32] tensor.
    for (size_t i = 0; i < 2; ++i) {
      std::vector<uint8_t> part = exec.readShard(w1, i);
      ASSERT_EQ(part.size(), 8u * 16 * 4);
      float first, last;
      std::memcpy(&first, part.data(), 4);
      std::memcpy(&last, part.data() + part.size() - 4, 4);
      EXPECT_EQ(first, float(16 * i));
      EXPECT_EQ(last, float(7 * 32 + 16 * i + 15));
    }
  }
}

using test::trainOnRandomInputs;

TEST(TensorParallel, TrainingEqualsOneDeviceAndReplicatedCopiesStayEqual) {
  plan::Plan one = compileOn("cpu:0");
  auto base = trainOnRandomInputs(one, 6);
  for (const char *devices : {"cpu:0+cpu:1", "cpu:0+cpu:1+cpu:2+cpu:3"}) {
    SCOPED_TRACE(devices);
    plan::Plan p = compileOn(devices);
    auto exec = trainOnRandomInputs(p, 6);
    for (const auto *list : {&p.params, &p.states})
      for (const plan::TensorRef &t : *list) {
        const plan::TensorRef &o =
            named(list == &p.params ? one.params : one.states, t.name);
        std::vector<float> a = base->readFloats(o), b = exec->readFloats(t);
        double diff = 0, norm = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
          norm += double(a[i]) * a[i];
        }
        EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm)) << t.name;
        // A replicated tensor's copies: the same bits on every device.
        for (const plan::Placement &m : t.mirrors) {
          plan::TensorRef copy = t;
          copy.device = m.device;
          copy.buffer = m.buffer;
          copy.mirrors.clear();
          EXPECT_EQ(exec->readFloats(copy), b) << t.name << " on " << p.devices[m.device].device;
        }
      }
  }
}

} // namespace
} // namespace mpc
