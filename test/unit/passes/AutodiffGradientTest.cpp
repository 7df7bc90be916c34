//===- test/unit/passes/AutodiffGradientTest.cpp - whole-graph gradients -===//
//
// The gradient graph autodiff builds, evaluated by the reference interpreter
// in float64, against central finite differences of the loss (also from the
// interpreter) on whole models: the seed model and a model with fan-out,
// broadcasting, stop_gradient and a parameter used on two devices. The same
// models compiled for one device give the same gradients as for three.
//
//===----------------------------------------------------------------------===//
#include "test/unit/passes/PassTestUtil.h"

#include "ir/Interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>

namespace mpc::passes {
namespace {

using Values = std::map<std::string, ir::RefTensor>;

/// Deterministic inputs for every input of `g`, in [-1.5, 1.5].
Values randomInputs(const ir::Graph &g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  Values in;
  for (const auto &n : g.nodes())
    if (n->kind == ir::NodeKind::Input) {
      ir::RefTensor t(n->type.shape);
      for (double &v : t.data) v = u(rng);
      in[n->name] = std::move(t);
    }
  return in;
}

/// Evaluates `g` with the given parameter values.
Values evaluate(const ir::Graph &g, const Values &params, const Values &inputs) {
  ir::Interpreter interp(g);
  for (const auto &[name, t] : params) interp.persistent()[name] = t;
  return interp.step(inputs);
}

/// Random f32 inputs, with the i32 inputs (ids, labels) taken from `fixed`.
Values inputsWith(const ir::Graph &g, uint64_t seed, const Values &fixed) {
  Values in = randomInputs(g, seed);
  for (const auto &[name, t] : fixed) in[name] = t;
  return in;
}

void checkGradients(const std::string &model, uint64_t seed, const Values &fixed = {},
                    const std::string &pipeline = test::kGradientPipeline,
                    const PassOptions &options = {}) {
  auto g = test::parse(model);
  test::runPasses(*g, pipeline, options);
  ASSERT_FALSE(g->gradients.empty());
  Values inputs = inputsWith(*g, seed, fixed);
  Values params = ir::Interpreter(*g).persistent();
  Values at = evaluate(*g, params, inputs);

  // Scalarising is the loss itself; every element of every parameter.
  for (const auto &[param, gradName] : g->gradients) {
    const ir::RefTensor &grad = at.at(gradName);
    const ir::RefTensor &p = params.at(param);
    ASSERT_EQ(grad.shape, p.shape) << param;
    for (size_t i = 0; i < p.data.size(); ++i) {
      double h = 1e-6 * std::max(1.0, std::abs(p.data[i]));
      Values plus = params, minus = params;
      plus[param].data[i] += h;
      minus[param].data[i] -= h;
      double lp = evaluate(*g, plus, inputs).at(g->loss).data[0];
      double lm = evaluate(*g, minus, inputs).at(g->loss).data[0];
      double numeric = (lp - lm) / (2 * h);
      double err = std::abs(numeric - grad.data[i]);
      // Glow's min(absolute, relative) error.
      EXPECT_LT(std::min(err, err / std::max(1e-12, std::abs(numeric))), 1e-6)
          << param << "[" << i << "]: autodiff " << grad.data[i] << ", numeric " << numeric;
    }
  }
}

TEST(AutodiffGradient, SeedModelMatchesFiniteDifferences) {
  checkGradients(test::seedModelJson(), 1);
}

TEST(AutodiffGradient, FanoutBroadcastModelMatchesFiniteDifferences) {
  checkGradients(test::kFanoutModel, 2);
}

/// Gradients by parameter name after compiling with `options`.
Values gradientsWith(const std::string &model, const PassOptions &options, uint64_t seed,
                     const Values &fixed = {},
                     const std::string &pipeline = test::kGradientPipeline) {
  auto g = test::parse(model);
  test::runPasses(*g, pipeline, options);
  Values inputs = inputsWith(*g, seed, fixed);
  Values all = ir::Interpreter(*g).step(inputs);
  Values out;
  for (const auto &[param, grad] : g->gradients) out[param] = all.at(grad);
  return out;
}

void expectSameOnOneAndThreeDevices(const std::string &model, std::map<std::string, std::string> map) {
  PassOptions one;
  one.devices = {"cpu:0"};
  one.groupMap = std::move(map);
  Values a = gradientsWith(model, one, 5);
  Values b = gradientsWith(model, PassOptions{}, 5);
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[param, t] : a) {
    ASSERT_TRUE(b.count(param)) << param;
    ASSERT_EQ(t.shape, b.at(param).shape);
    for (size_t i = 0; i < t.data.size(); ++i)
      EXPECT_NEAR(t.data[i], b.at(param).data[i], 1e-12) << param << "[" << i << "]";
  }
}

TEST(AutodiffGradient, OneDeviceAndThreeDevicesAgree) {
  expectSameOnOneAndThreeDevices(test::seedModelJson(),
                                 {{"stage0", "cpu:0"}, {"stage1", "cpu:0"}, {"stage2", "cpu:0"}});
  expectSameOnOneAndThreeDevices(test::kFanoutModel,
                                 {{"g0", "cpu:0"}, {"g1", "cpu:0"}, {"g2", "cpu:0"}});
}


/// A small causal language model over two devices: embedding, layer_norm,
/// batched projections, causal attention, a concat, tanh gelu and a
/// per-position cross-entropy that ignores label 0.
const char *kTinyLmModel = R"json({
  "mpc": 1, "name": "tiny_lm",
  "inputs": {"ids": {"shape": [4, 3], "dtype": "i32"}, "labels": {"shape": [4, 3], "dtype": "i32"}},
  "params": {"emb": {"shape": [7, 4], "init": {"normal": {"mean": 0, "std": 0.5}}, "device": "a"},
             "gamma": {"shape": [4], "init": {"normal": {"mean": 1, "std": 0.2}}, "device": "a"},
             "beta": {"shape": [4], "init": {"normal": {"mean": 0, "std": 0.2}}, "device": "a"},
             "wq": {"shape": [4, 4], "init": {"xavier": {"magnitude": 1}}, "device": "a"},
             "wk": {"shape": [4, 4], "init": {"xavier": {"magnitude": 1}}, "device": "a"},
             "wv": {"shape": [4, 4], "init": {"xavier": {"magnitude": 1}}, "device": "b"},
             "wo": {"shape": [8, 7], "init": {"xavier": {"magnitude": 1}}, "device": "b"}},
  "nodes": [
   {"name": "e", "op": "embedding", "inputs": ["ids", "emb"], "device": "a"},
   {"name": "h", "op": "layer_norm", "inputs": ["e", "gamma", "beta"], "device": "a"},
   {"name": "q", "op": "matmul", "inputs": ["h", "wq"], "device": "a"},
   {"name": "k", "op": "matmul", "inputs": ["h", "wk"], "device": "a"},
   {"name": "s", "op": "matmul", "inputs": ["q", "k"], "attrs": {"transpose_b": true}, "device": "a"},
   {"name": "m", "op": "causal_mask", "inputs": ["s"], "device": "a"},
   {"name": "p", "op": "softmax", "inputs": ["m"], "device": "b"},
   {"name": "v", "op": "matmul", "inputs": ["h", "wv"], "device": "b"},
   {"name": "c", "op": "matmul", "inputs": ["p", "v"], "device": "b"},
   {"name": "j", "op": "concat", "inputs": ["c", "h"], "attrs": {"axis": -1}, "device": "b"},
   {"name": "g", "op": "gelu", "inputs": ["j"], "attrs": {"approximate": "tanh"}, "device": "b"},
   {"name": "logits", "op": "matmul", "inputs": ["g", "wo"], "device": "b"},
   {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["logits", "labels"],
    "attrs": {"ignore_index": 0}, "device": "b"}
  ],
  "loss": "loss", "outputs": ["logits"]
})json";

/// ids with repeats; one ignored label (0) in each half of the batch, so the
/// two micro-batches count the same number of rows.
Values tinyLmData() {
  Values v;
  v["ids"] = ir::RefTensor({4, 3});
  v["ids"].data = {1, 3, 1, 4, 6, 4, 0, 2, 2, 5, 1, 3};
  v["labels"] = ir::RefTensor({4, 3});
  v["labels"].data = {2, 0, 4, 1, 3, 6, 5, 5, 0, 1, 2, 3};
  return v;
}

const char *kMicrobatchGradientPipeline =
    "infer-shapes,place,microbatch,insert-copies,autodiff,insert-copies";

TEST(AutodiffGradient, TinyLanguageModelMatchesFiniteDifferences) {
  checkGradients(kTinyLmModel, 3, tinyLmData());
}

TEST(AutodiffGradient, TinyLanguageModelMicrobatchedMatchesFiniteDifferences) {
  PassOptions two;
  two.microbatches = 2;
  checkGradients(kTinyLmModel, 4, tinyLmData(), kMicrobatchGradientPipeline, two);
}

TEST(AutodiffGradient, TinyLanguageModelMicrobatchesAndDevicesAgree) {
  PassOptions one, two;
  one.devices = {"cpu:0"};
  one.groupMap = {{"a", "cpu:0"}, {"b", "cpu:0"}};
  two.microbatches = 2;
  Values a = gradientsWith(kTinyLmModel, one, 6, tinyLmData(), kMicrobatchGradientPipeline);
  Values b = gradientsWith(kTinyLmModel, two, 6, tinyLmData(), kMicrobatchGradientPipeline);
  ASSERT_EQ(a.size(), 7u);
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[param, t] : a) {
    ASSERT_TRUE(b.count(param)) << param;
    ASSERT_EQ(t.shape, b.at(param).shape);
    for (size_t i = 0; i < t.data.size(); ++i)
      EXPECT_NEAR(t.data[i], b.at(param).data[i], 1e-12) << param << "[" << i << "]";
  }
}

} // namespace
} // namespace mpc::passes
