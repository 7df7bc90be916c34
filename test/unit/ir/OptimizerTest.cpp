//===- test/unit/ir/OptimizerTest.cpp - torch.optim semantics -----------===//
//
// Three steps of sgd_update and adam_update through the Interpreter, from
// p = [1, -2, 0.5] with fixed gradients, against values worked out by hand
// following torch.optim.SGD / Adam / AdamW step by step (the first SGD cases
// can be checked mentally: plain SGD gives 1 - 0.1 * (0.5 - 0.2 + 0.3)).
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "ir/Interpreter.h"

#include <gtest/gtest.h>

namespace mpc::ir {
namespace {

const std::vector<double> kP0 = {1.0, -2.0, 0.5};
const std::vector<std::vector<double>> kGrads = {
    {0.5, 0.1, -0.3}, {-0.2, 0.4, 0.6}, {0.3, -0.1, 0.2}};

struct Result {
  std::vector<double> param, state1, state2, step;
};

/// Runs three steps of `op` on a graph p, g (input), state tensors.
Result run(OpKind op, AttrMap attrs, bool withState) {
  Graph g;
  TensorType t{DType::F32, {3}};
  Node *p = g.addParam("p", t, InitSpec{});
  Node *grad = g.addInput("g", t);
  std::vector<Node *> operands = {p, grad};
  if (withState) {
    operands.push_back(g.addState("p.s1", t, InitSpec{}, "p"));
    if (op == OpKind::AdamUpdate) operands.push_back(g.addState("p.s2", t, InitSpec{}, "p"));
    operands.push_back(g.addState("p.step", {DType::F32, {1}}, InitSpec{}, "p"));
  }
  Builder b(g);
  Node *upd = b.create(op, operands, std::move(attrs), "p.update");
  Interpreter in(g);
  in.persistent()["p"].data = kP0;
  std::map<std::string, RefTensor> out;
  for (const auto &gv : kGrads) {
    RefTensor gt({3});
    gt.data = gv;
    out = in.step({{"g", gt}});
  }
  EXPECT_EQ(out.at(upd->name).data, in.persistent()["p"].data) << "result is the new param";
  Result r;
  r.param = in.persistent()["p"].data;
  if (withState) {
    r.state1 = in.persistent()["p.s1"].data;
    if (op == OpKind::AdamUpdate) r.state2 = in.persistent()["p.s2"].data;
    r.step = in.persistent()["p.step"].data;
  }
  return r;
}

void expectNear(const std::vector<double> &got, const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

TEST(SgdUpdate, Plain) {
  Result r = run(OpKind::SgdUpdate, {{"lr", 0.1}}, false);
  expectNear(r.param, {0.94, -2.04, 0.45});
}

TEST(SgdUpdate, WeightDecay) {
  Result r = run(OpKind::SgdUpdate, {{"lr", 0.1}, {"weight_decay", 0.1}}, false);
  expectNear(r.param, {0.911094, -1.979999, 0.4351525});
}

TEST(SgdUpdate, MomentumStartsFromTheFirstGradient) {
  Result r = run(OpKind::SgdUpdate, {{"lr", 0.1}, {"momentum", 0.9}}, true);
  expectNear(r.param, {0.8725, -2.0931, 0.4473});
  expectNear(r.state1, {0.525, 0.341, 0.497});
  expectNear(r.step, {3.0});
}

TEST(SgdUpdate, Dampening) {
  Result r = run(OpKind::SgdUpdate, {{"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.5}}, true);
  expectNear(r.param, {0.8685, -2.0601, 0.5143});
  expectNear(r.state1, {0.465, 0.211, 0.127});
}

TEST(SgdUpdate, NesterovWithWeightDecay) {
  Result r = run(OpKind::SgdUpdate,
                 {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}},
                 true);
  expectNear(r.param, {0.817657258191, -2.107472490872, 0.3984603163405});
  expectNear(r.state1, {0.5502086411, 0.2857246888, 0.51070333505});
}

TEST(SgdUpdate, StateOperandsWithoutMomentumOnlyCountSteps) {
  Result r = run(OpKind::SgdUpdate, {{"lr", 0.1}}, true);
  expectNear(r.param, {0.94, -2.04, 0.45});
  expectNear(r.state1, {0, 0, 0});
  expectNear(r.step, {3.0});
}

TEST(AdamUpdate, Adam) {
  Result r = run(OpKind::AdamUpdate, {{"lr", 0.01}}, true);
  expectNear(r.param, {0.98109953836811548, -2.0239807628910227, 0.50180088718445937});
  expectNear(r.state1, {0.0525, 0.0341, 0.0497});
  expectNear(r.state2, {0.00037946025, 0.00017982001, 0.00048946009});
  expectNear(r.step, {3.0});
}

TEST(AdamUpdate, AdamWithL2WeightDecay) {
  Result r = run(OpKind::AdamUpdate, {{"lr", 0.01}, {"weight_decay", 0.1}}, true);
  expectNear(r.param, {0.97765342010031675, -1.9902736060290493, 0.49998592331508857});
  expectNear(r.state1, {0.079356283246976508, -0.019946795904507344, 0.063394539125311372});
}

TEST(AdamUpdate, AdamWDecouplesWeightDecay) {
  Result r =
      run(OpKind::AdamUpdate, {{"lr", 0.01}, {"weight_decay", 0.1}, {"decoupled", true}}, true);
  expectNear(r.param, {0.97812598342610402, -2.0179579271284189, 0.50028605772031898});
  // The moments see the raw gradients, exactly as without weight decay.
  expectNear(r.state1, {0.0525, 0.0341, 0.0497});
}

TEST(AdamUpdate, CustomBetasAndEps) {
  Result r = run(OpKind::AdamUpdate,
                 {{"lr", 0.05}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-6}}, true);
  expectNear(r.param, {0.90884251001502436, -2.1193901956318206, 0.5041932663542954});
  expectNear(r.state2, {0.00374625, 0.00178201, 0.00484609});
}

TEST(AdamUpdate, FirstStepMovesEveryElementByAboutLr) {
  // With bias correction the first Adam step is lr * g / (|g| + eps').
  Graph g;
  TensorType t{DType::F32, {3}};
  Node *p = g.addParam("p", t, InitSpec{});
  Node *grad = g.addInput("g", t);
  Builder b(g);
  b.create(OpKind::AdamUpdate,
           {p, grad, g.addState("m", t, {}, "p"), g.addState("v", t, {}, "p"),
            g.addState("s", {DType::F32, {1}}, {}, "p")},
           {{"lr", 0.01}});
  Interpreter in(g);
  RefTensor gt({3});
  gt.data = {3.0, -0.001, 50.0};
  in.step({{"g", gt}});
  expectNear(in.persistent()["p"].data, {-0.01 * 3.0 / (3.0 + 1e-8),
                                         0.01 * 0.001 / (0.001 + 1e-8),
                                         -0.01 * 50.0 / (50.0 + 1e-8)});
}

} // namespace
} // namespace mpc::ir
