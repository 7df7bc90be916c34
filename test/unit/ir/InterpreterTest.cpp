//===- test/unit/ir/InterpreterTest.cpp - the reference evaluator -------===//
#include "ir/Builder.h"
#include "ir/Init.h"
#include "ir/Interpreter.h"
#include "support/Error.h"

#include <gtest/gtest.h>

namespace mpc::ir {
namespace {

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }

RefTensor tensor(Shape s, std::vector<double> v) {
  RefTensor t(std::move(s));
  t.data = std::move(v);
  return t;
}

/// x[2,3] -> relu(x w + b) -> mean, with w = ones and b = constant(0.5).
struct Dense {
  Graph g;
  Node *x, *w, *bias, *h, *r, *loss;
  Dense() {
    x = g.addInput("x", f32({2, 3}));
    w = g.addParam("w", f32({3, 2}), InitSpec{InitSpec::Ones});
    bias = g.addParam("b", f32({2}), InitSpec{InitSpec::Constant, 0.5});
    Builder b(g);
    Node *mm = b.matmul(x, w); // named "matmul"
    h = b.create(OpKind::Add, {mm, bias}, {}, "h");
    r = b.create(OpKind::Relu, {h}, {}, "r");
    loss = b.create(OpKind::Mean, {r}, {}, "loss");
  }
};

TEST(Interpreter, EvaluatesEveryNode) {
  Dense d;
  Interpreter in(d.g);
  auto v = in.step({{"x", tensor({2, 3}, {1, 2, 3, -4, -5, -6})}});
  EXPECT_EQ(v.at("matmul").data, (std::vector<double>{6, 6, -15, -15}));
  EXPECT_EQ(v.at("h").data, (std::vector<double>{6.5, 6.5, -14.5, -14.5}));
  EXPECT_EQ(v.at("r").data, (std::vector<double>{6.5, 6.5, 0, 0}));
  EXPECT_EQ(v.at("loss").shape, Shape{});
  EXPECT_DOUBLE_EQ(v.at("loss").data[0], 3.25);
  EXPECT_EQ(v.at("w").data, std::vector<double>(6, 1.0));
}

TEST(Interpreter, StartsFromTheInitialValues) {
  Graph g;
  g.addParam("w", f32({4, 3}), InitSpec{InitSpec::Xavier, 2.24});
  g.addState("w.m", f32({4, 3}), InitSpec{InitSpec::Normal, 0.0, 1.0}, "w");
  Interpreter in(g, /*seed=*/5);
  for (const char *name : {"w", "w.m"}) {
    const Node *n = g.find(name);
    std::vector<float> want = initialValues(*n->init, n->type.shape, name, 5);
    const RefTensor &got = in.persistent().at(name);
    ASSERT_EQ(got.data.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.data[i], double(want[i]));
  }
}

TEST(Interpreter, MissingInputIsAUserErrorNamingIt) {
  Dense d;
  Interpreter in(d.g);
  try {
    in.step({});
    FAIL() << "expected UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.where(), "input 'x'");
    EXPECT_NE(e.message().find("'x'"), std::string::npos) << e.what();
  }
}

TEST(Interpreter, MisShapedInputIsAUserErrorNamingIt) {
  Dense d;
  Interpreter in(d.g);
  try {
    in.step({{"x", tensor({3, 2}, {1, 2, 3, 4, 5, 6})}});
    FAIL() << "expected UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "value for input 'x' has shape [3,2], expected f32[2,3]");
  }
}

TEST(Interpreter, CopyIsIdentityAndFillIsConstant) {
  Graph g;
  Node *x = g.addInput("x", f32({2}));
  x->device = "cpu:0";
  Builder b(g);
  Node *c = b.copyTo(x, "gpu:1", "x.to.gpu1");
  Node *f = b.fill(2.5, {2});
  Node *y = b.mul(c, f);
  Interpreter in(g);
  auto v = in.step({{"x", tensor({2}, {1, -3})}});
  EXPECT_EQ(v.at(c->name).data, (std::vector<double>{1, -3}));
  EXPECT_EQ(v.at(f->name).data, (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(v.at(y->name).data, (std::vector<double>{2.5, -7.5}));
}

TEST(Interpreter, UpdatesRunAfterEveryReadOfTheParameter) {
  // The update is created before the read; the read still sees the old value.
  Graph g;
  Node *p = g.addParam("p", f32({2}), InitSpec{InitSpec::Constant, 1.0});
  Node *grad = g.addInput("g", f32({2}));
  Builder b(g);
  Node *upd = b.create(OpKind::SgdUpdate, {p, grad}, {{"lr", 0.5}}, "p.update");
  Node *read = b.scale(p, 2.0);
  Node *afterUpd = b.scale(upd, 1.0);
  Interpreter in(g);
  auto v = in.step({{"g", tensor({2}, {1, 2})}});
  EXPECT_EQ(v.at(read->name).data, (std::vector<double>{2, 2}));
  EXPECT_EQ(v.at(upd->name).data, (std::vector<double>{0.5, 0}));
  EXPECT_EQ(v.at(afterUpd->name).data, (std::vector<double>{0.5, 0}));
  EXPECT_EQ(in.persistent().at("p").data, (std::vector<double>{0.5, 0}));
  v = in.step({{"g", tensor({2}, {1, 2})}});
  EXPECT_EQ(v.at(read->name).data, (std::vector<double>{1, 0}));
  EXPECT_EQ(in.persistent().at("p").data, (std::vector<double>{0, -1}));
}

TEST(Interpreter, TrainsALinearRegression) {
  // y = x w with sgd on mse: the loss falls by orders of magnitude.
  Graph g;
  Node *x = g.addInput("x", f32({4, 2}));
  Node *t = g.addInput("t", f32({4, 1}));
  Node *w = g.addParam("w", f32({2, 1}), InitSpec{InitSpec::Zeros});
  Builder b(g);
  Node *y = b.matmul(x, w);
  Node *loss = b.create(OpKind::MseLoss, {y, t}, {}, "loss");
  Node *dy = b.fill(1.0, {});
  // d loss / d w by the records' gradient rules.
  std::vector<Node *> gl = loss->info().grad(b, *loss, dy);
  std::vector<Node *> gm = y->info().grad(b, *y, gl[0]);
  b.create(OpKind::SgdUpdate, {w, gm[1]}, {{"lr", 0.1}}, "w.update");
  Interpreter in(g);
  RefTensor xs = tensor({4, 2}, {1, 0, 0, 1, 1, 1, 2, -1});
  RefTensor ts = tensor({4, 1}, {3, -2, 1, 8});
  double first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    double l = in.step({{"x", xs}, {"t", ts}}).at("loss").data[0];
    if (i == 0) first = l;
    last = l;
  }
  EXPECT_GT(first, 1.0);
  EXPECT_LT(last, first * 1e-6);
  EXPECT_NEAR(in.persistent().at("w").data[0], 3.0, 1e-4);
  EXPECT_NEAR(in.persistent().at("w").data[1], -2.0, 1e-4);
}

} // namespace
} // namespace mpc::ir
