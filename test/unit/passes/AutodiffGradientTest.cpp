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

void checkGradients(const std::string &model, uint64_t seed) {
  auto g = test::parse(model);
  test::runPasses(*g, test::kGradientPipeline);
  ASSERT_FALSE(g->gradients.empty());
  Values inputs = randomInputs(*g, seed);
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
Values gradientsWith(const std::string &model, const PassOptions &options, uint64_t seed) {
  auto g = test::parse(model);
  test::runPasses(*g, test::kGradientPipeline, options);
  Values inputs = randomInputs(*g, seed);
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

} // namespace
} // namespace mpc::passes
