//===- test/unit/passes/PlacementPassesTest.cpp - place, copies, updates -===//
//
// The rules of place (group mapping, propagation, colocation), insert-copies
// (one shared copy per value and destination, idempotent), autodiff's
// errors and warnings, and optimize-step's state and update ops.
//
//===----------------------------------------------------------------------===//
#include "test/unit/passes/PassTestUtil.h"

#include "support/Error.h"

#include <gtest/gtest.h>

#include <string>

namespace mpc::passes {
namespace {

using test::kFanoutModel;
using test::seedModelJson;
using test::parse;
using test::runPasses;

int countOps(const ir::Graph &g, ir::OpKind k) {
  int c = 0;
  for (const auto &n : g.nodes()) c += n->isOp(k);
  return c;
}

std::string errorOf(ir::Graph &g, const std::string &pass, const PassOptions &o = {}) {
  PassContext ctx;
  ctx.options = o;
  try {
    createPass(pass)->run(g, ctx);
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

TEST(Place, MapsGroupsInOrderOfFirstAppearance) {
  auto g = parse(test::seedModelJson());
  runPasses(*g, "place");
  for (const char *n : {"x", "w0", "b0", "h0", "z0"}) EXPECT_EQ(g->find(n)->device, "cpu:0") << n;
  for (const char *n : {"w1", "b1", "h1", "z1"}) EXPECT_EQ(g->find(n)->device, "cpu:1") << n;
  for (const char *n : {"w2", "b2", "h2", "z2", "loss", "y"})
    EXPECT_EQ(g->find(n)->device, "cpu:2") << n;
}

TEST(Place, ExplicitMapTakesPrecedence) {
  auto g = parse(test::seedModelJson());
  PassOptions o;
  o.devices = {"gpu:0", "gpu:1", "gpu:2"};
  o.groupMap = {{"stage0", "gpu:2"}};
  runPasses(*g, "place", o);
  EXPECT_EQ(g->find("h0")->device, "gpu:2");
  EXPECT_EQ(g->find("h1")->device, "gpu:0"); // first free device
  EXPECT_EQ(g->find("h2")->device, "gpu:1");
}

TEST(Place, IsIdempotent) {
  auto g = parse(test::seedModelJson());
  runPasses(*g, "place");
  PassContext ctx;
  EXPECT_FALSE(createPass("place")->run(*g, ctx));
}

TEST(Place, Errors) {
  {
    auto g = parse(test::seedModelJson());
    PassOptions o;
    o.groupMap = {{"stage9", "cpu:0"}};
    EXPECT_NE(errorOf(*g, "place", o).find("unknown group 'stage9'"), std::string::npos);
  }
  {
    auto g = parse(test::seedModelJson());
    g->find("h1")->device = "cpu:5";
    PassOptions o;
    o.devices = {"cpu:0", "cpu:1", "cpu:2"};
    std::string e = errorOf(*g, "place", o);
    EXPECT_NE(e.find("beyond --devices"), std::string::npos) << e;
    EXPECT_NE(e.find("/nodes/2/device"), std::string::npos) << e;
  }
  {
    auto g = parse(test::seedModelJson());
    PassOptions o;
    o.devices = {"cpu:0", "cpu:1"};
    EXPECT_NE(errorOf(*g, "place", o).find("group 'stage2'"), std::string::npos);
  }
}

TEST(Place, PropagatesToUnannotatedNodes) {
  auto g = parse(kFanoutModel);
  runPasses(*g, "place");
  EXPECT_EQ(g->find("a")->device, "cpu:0"); // forward from h
  EXPECT_EQ(g->find("u")->device, "cpu:1"); // forward from t (first operand)
  EXPECT_EQ(g->find("k")->device, "cpu:1");
  EXPECT_EQ(g->find("e")->device, "cpu:2"); // forward from q
  EXPECT_EQ(g->find("y")->device, "cpu:2"); // backward from loss
  EXPECT_EQ(g->find("x")->device, "cpu:0"); // backward from h
}

TEST(InsertCopies, OneSharedCopyPerValueAndDevice) {
  auto g = parse(kFanoutModel);
  runPasses(*g, "place,insert-copies");
  // w (cpu:0) to q (cpu:2); a (cpu:0) to t; s needs none (g1 is cpu:1);
  // r and k (cpu:1) to cpu:2.
  EXPECT_EQ(countOps(*g, ir::OpKind::Copy), 4);
  ir::Node *c = g->find("w.to.cpu2");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->device, "cpu:2");
  EXPECT_EQ(g->find("q")->inputs[1], c);
  EXPECT_TRUE(g->find("r.to.cpu2"));
  EXPECT_TRUE(g->find("k.to.cpu2"));
  EXPECT_TRUE(g->find("a.to.cpu1"));
  PassContext ctx;
  EXPECT_FALSE(createPass("insert-copies")->run(*g, ctx));
}

TEST(InsertCopies, NeedsAPlacedGraph) {
  auto g = parse(test::seedModelJson());
  EXPECT_NE(errorOf(*g, "insert-copies").find("run 'place' before 'insert-copies'"),
            std::string::npos);
}

TEST(Autodiff, CopiesInBothDirections) {
  auto g = parse(test::seedModelJson());
  runPasses(*g, test::kGradientPipeline);
  ASSERT_EQ(g->gradients.size(), 6u);
  for (const auto &[param, grad] : g->gradients) {
    ir::Node *p = g->find(param), *d = g->find(grad);
    ASSERT_TRUE(d) << grad;
    EXPECT_EQ(grad, param + ".grad");
    EXPECT_EQ(d->device, p->device) << param;
    EXPECT_EQ(d->type, p->type) << param;
  }
  // Forward: z0 to cpu:1, z1 to cpu:2. Backward: their gradients come back.
  ir::Node *back0 = g->find("z0.grad"), *back1 = g->find("z1.grad");
  ASSERT_TRUE(back0 && back1);
  EXPECT_TRUE(back0->isOp(ir::OpKind::Copy));
  EXPECT_EQ(back0->device, "cpu:0");
  EXPECT_EQ(back0->inputs[0]->device, "cpu:1");
  EXPECT_TRUE(back1->isOp(ir::OpKind::Copy));
  EXPECT_EQ(back1->device, "cpu:1");
  // No gradient for the data inputs.
  for (const auto &n : g->nodes()) EXPECT_NE(n->origin, "x") << n->name;
}

TEST(Autodiff, Errors) {
  {
    auto g = parse(test::seedModelJson());
    g->loss.clear();
    EXPECT_NE(errorOf(*g, "autodiff").find("autodiff needs a loss"), std::string::npos);
  }
  {
    auto g = parse(test::seedModelJson());
    g->loss = "z2";
    EXPECT_NE(errorOf(*g, "autodiff").find("must be a scalar f32"), std::string::npos);
  }
}

TEST(Autodiff, StopGradientPrunesAndWarns) {
  auto g = parse(R"json({
    "mpc": 1, "name": "frozen",
    "inputs": { "x": {"shape": [2, 2]} },
    "params": { "w": {"shape": [2, 2], "init": "zeros"}, "f": {"shape": [2, 2], "init": "zeros"} },
    "nodes": [
      {"name": "h", "op": "matmul", "inputs": ["x", "w"]},
      {"name": "k", "op": "stop_gradient", "inputs": ["f"]},
      {"name": "s", "op": "add", "inputs": ["h", "k"]},
      {"name": "loss", "op": "sum", "inputs": ["s"], "attrs": {"axes": [0, 1]}}
    ],
    "loss": "loss"
  })json");
  testing::internal::CaptureStderr();
  runPasses(*g, "place,insert-copies,autodiff");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("model.json: warning: param 'f' does not reach the loss and will not be "
                     "trained"),
            std::string::npos)
      << err;
  EXPECT_EQ(g->gradients.size(), 1u);
  EXPECT_TRUE(g->gradients.count("w"));
}

TEST(OptimizeStep, AdamStateAndUpdatesOnTheParamDevice) {
  auto g = parse(test::seedModelJson());
  runPasses(*g, test::kTrainingPipeline);
  for (const char *p : {"w0", "b0", "w1", "b1", "w2", "b2"}) {
    std::string base = p;
    ir::Node *u = g->find(base + ".update");
    ASSERT_TRUE(u) << p;
    EXPECT_TRUE(u->isOp(ir::OpKind::AdamUpdate));
    EXPECT_EQ(u->device, g->find(base)->device);
    for (const char *slot : {".adam.m", ".adam.v", ".adam.step"}) {
      ir::Node *s = g->find(base + slot);
      ASSERT_TRUE(s) << base + slot;
      EXPECT_EQ(s->kind, ir::NodeKind::State);
      EXPECT_EQ(s->device, g->find(base)->device);
    }
    EXPECT_EQ(std::get<double>(u->attrs.at("lr")), 0.001);
    EXPECT_FALSE(std::get<bool>(u->attrs.at("decoupled")));
  }
  PassContext ctx;
  EXPECT_FALSE(createPass("optimize-step")->run(*g, ctx));
}

TEST(OptimizeStep, SgdMomentumAndOverrides) {
  auto g = parse(kFanoutModel);
  runPasses(*g, test::kTrainingPipeline);
  EXPECT_TRUE(g->find("w.sgd.momentum"));
  EXPECT_TRUE(g->find("w.sgd.step"));
  EXPECT_TRUE(g->find("w.update")->isOp(ir::OpKind::SgdUpdate));

  auto h = parse(kFanoutModel);
  PassOptions o;
  o.optimizer = "adamw";
  o.lr = 0.5;
  runPasses(*h, test::kTrainingPipeline, o);
  ir::Node *u = h->find("v.update");
  ASSERT_TRUE(u && u->isOp(ir::OpKind::AdamUpdate));
  EXPECT_TRUE(std::get<bool>(u->attrs.at("decoupled")));
  EXPECT_EQ(std::get<double>(u->attrs.at("lr")), 0.5);
  EXPECT_TRUE(h->find("v.adamw.m"));
}

TEST(OptimizeStep, NoLossNoUpdates) {
  auto g = parse(test::seedModelJson());
  g->loss.clear();
  runPasses(*g, "place,insert-copies,optimize-step");
  EXPECT_EQ(countOps(*g, ir::OpKind::AdamUpdate), 0);
}

} // namespace
} // namespace mpc::passes
