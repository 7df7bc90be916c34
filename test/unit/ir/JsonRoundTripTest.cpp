//===- test/unit/ir/JsonRoundTripTest.cpp - writer then reader ----------===//
//
// writeModelJson followed by readModelJson gives back an equal graph: names,
// kinds, ops, operands, attributes, types, devices, inits, optimizer,
// outputs, loss, stage flags, gradients, backward flags and origins. Checked
// on the seed model and on a hand-built training graph with state,
// gradients, copies, updates and concrete devices.
//
//===----------------------------------------------------------------------===//
#include "test/unit/ir/FrontendModels.h"

#include "ir/Builder.h"
#include "ir/JsonReader.h"
#include "ir/JsonWriter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace mpc;
using namespace mpc::ir;
using mpc::test::seedModelJson;
using mpc::test::readModel;

namespace {

/// Writes, reads back and checks equality; returns the read graph.
std::unique_ptr<Graph> roundTrip(const Graph &g) {
  std::string text = writeModelJson(g);
  std::unique_ptr<Graph> back;
  try {
    back = readModelJson(text, "roundtrip.json");
  } catch (const UserError &e) {
    ADD_FAILURE() << "written model does not read back: " << e.what() << "\n" << text;
    return nullptr;
  }
  EXPECT_EQ(diffGraphs(g, *back), "") << text;
  // Writing is a fixed point.
  EXPECT_EQ(writeModelJson(*back), text);
  return back;
}

TEST(JsonRoundTrip, SeedModel) {
  auto g = readModel(test::seedModelJson());
  auto back = roundTrip(*g);
  ASSERT_TRUE(back);
  EXPECT_EQ(printGraph(*back), printGraph(*g));
  // Creation order survives, so the topological order does too.
  for (size_t i = 0; i < g->nodes().size(); ++i)
    EXPECT_EQ(back->nodes()[i]->name, g->nodes()[i]->name);
}

TEST(JsonRoundTrip, WrittenFormIsOneEntryPerLine) {
  auto g = readModel(test::seedModelJson());
  std::string text = writeModelJson(*g);
  EXPECT_THAT(text, ::testing::StartsWith("{\n  \"mpc\": 1,\n  \"name\": \"regression3\",\n"
                                          "  \"inputs\": {\n    \"x\": {\"shape\": [100, 2]},\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "    \"w0\": {\"shape\": [2, 2], \"init\": {\"xavier\": {\"magnitude\": "
                        "2.24}}, \"device\": \"stage0\"},\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "    {\"name\": \"h0\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w0\"], "
                        "\"attrs\": {\"transpose_a\": false, \"transpose_b\": false}, "
                        "\"device\": \"stage0\"},\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("  \"loss\": \"loss\",\n  \"outputs\": [\"z2\"],\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("\"stages\": [\"shaped\"]\n}\n"));
}

TEST(JsonRoundTrip, DiffGraphsSeesDifferences) {
  auto a = readModel(test::seedModelJson());
  auto b = readModel(test::seedModelJson());
  EXPECT_EQ(diffGraphs(*a, *b), "");
  b->find("h1")->device = "gpu:1";
  EXPECT_EQ(diffGraphs(*a, *b), "node 'h1': device 'stage1' vs 'gpu:1'");
  b = readModel(test::seedModelJson());
  b->find("w0")->init->a = 2.25;
  EXPECT_EQ(diffGraphs(*a, *b), "node 'w0': init xavier(2.24) vs xavier(2.25)");
  b = readModel(test::seedModelJson());
  b->gradients.set("w0", "h0");
  EXPECT_EQ(diffGraphs(*a, *b), "gradients differ");
}

/// The seed model as the training passes would leave it, built by hand:
/// concrete devices, a copy, backward nodes with origins, gradients, Adam
/// state and updates, an i32 input, and every stage flag.
std::unique_ptr<Graph> trainingGraph() {
  auto g = readModel(test::seedModelJson());
  const char *devs[] = {"cpu:0", "cpu:1", "gpu:2"};
  for (const auto &n : g->nodes()) {
    if (n->device == "stage0" || n->device.empty()) n->device = devs[0];
    else if (n->device == "stage1") n->device = devs[1];
    else n->device = devs[2];
  }
  Graph &gr = *g;
  gr.addInput("labels", TensorType{DType::I32, {100}})->device = "cpu:0";
  Builder b(gr);
  b.backward = true;
  b.device = "cpu:0";
  b.origin = "loss";
  Node *seed = b.fill(1.0, {});
  EXPECT_EQ(seed->name, "fill");
  b.origin = "h0";
  Node *x = gr.find("x");
  Node *dz = b.fill(0.30000000000000004, {100, 2});
  Node *gw0 = b.matmul(x, dz, /*transposeA=*/true, false);
  Node *moved = b.copyTo(gw0, "cpu:1", "w0.grad.to.cpu1");
  moved->backward = true;
  Node *scaled = b.scale(gw0, 1.0 / 3.0);
  gr.gradients.set("w0", gw0->name);
  (void)moved;
  (void)scaled;

  gr.optimizer = OptimizerSpec{};
  gr.optimizer->kind = "adam";
  gr.optimizer->lr = 1e-3;
  gr.optimizer->eps = 1e-7;
  Node *w0 = gr.find("w0");
  Node *m = gr.addState("w0.adam.m", w0->type, InitSpec{InitSpec::Zeros}, "w0");
  Node *v = gr.addState("w0.adam.v", w0->type, InitSpec{InitSpec::Constant, 0.125}, "w0");
  Node *t = gr.addState("w0.adam.step", TensorType{DType::F32, {1}}, InitSpec{}, "w0");
  for (Node *s : {m, v, t}) s->device = w0->device;
  Builder u(gr);
  u.device = w0->device;
  u.origin = "w0";
  u.create(OpKind::AdamUpdate, {w0, gw0, m, v, t},
           {{"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-7}}, "w0.update");
  gr.find("w1")->init = InitSpec{InitSpec::Uniform, -0.1, 0.25};
  gr.find("w2")->init = InitSpec{InitSpec::Normal, 0.5, 1e-3};
  gr.find("b1")->init = InitSpec{InitSpec::Ones};
  gr.stages = kShaped | kPlaced | kCopiesExplicit | kDifferentiated | kOptimized;
  return g;
}

TEST(JsonRoundTrip, TrainingGraphWithStateGradientsAndDevices) {
  auto g = trainingGraph();
  auto back = roundTrip(*g);
  ASSERT_TRUE(back);
  const Node *m = back->find("w0.adam.m");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, NodeKind::State);
  EXPECT_EQ(m->origin, "w0");
  EXPECT_EQ(m->device, "cpu:0");
  EXPECT_EQ(back->find("labels")->type.str(), "i32[100]");
  EXPECT_TRUE(back->find("w0.grad.to.cpu1")->backward);
  EXPECT_EQ(back->find("w0.grad.to.cpu1")->origin, "h0");
  EXPECT_FALSE(back->find("h0")->backward);
  EXPECT_EQ(back->gradients.at("w0"), g->gradients.at("w0"));
  EXPECT_EQ(back->stages, g->stages);
  EXPECT_EQ(back->optimizer, g->optimizer);
  // Floats keep every bit.
  EXPECT_EQ(getFloat(back->find("scale")->attrs, "value"), 1.0 / 3.0);
  EXPECT_EQ(getFloat(back->find("fill.1")->attrs, "value"), 0.30000000000000004);
  // The written graph reads back in file order: inputs, params, state, nodes.
  EXPECT_EQ(back->find("labels")->id, 2);
}

TEST(JsonRoundTrip, Optimizers) {
  auto g = readModel(test::seedModelJson());
  OptimizerSpec sgd;
  sgd.kind = "sgd";
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weightDecay = 1e-4;
  g->optimizer = sgd;
  roundTrip(*g);
  OptimizerSpec sgd2 = sgd;
  sgd2.nesterov = false;
  sgd2.dampening = 0.1;
  g->optimizer = sgd2;
  roundTrip(*g);
  OptimizerSpec adamw;
  adamw.kind = "adamw";
  adamw.lr = 3e-4;
  adamw.beta1 = 0.8;
  adamw.beta2 = 0.95;
  adamw.weightDecay = 0.05;
  g->optimizer = adamw;
  roundTrip(*g);
  g->optimizer.reset();
  roundTrip(*g);
}

TEST(JsonRoundTrip, EmptyAndForwardOnlyGraphs) {
  Graph g;
  g.name = "empty";
  g.stages = kShaped; // the reader infers shapes, so what it reads is always shaped
  roundTrip(g);
  auto fwd = readModel(R"({"mpc": 1, "name": "f", "inputs": {"x": {"shape": []}},
      "nodes": [{"name": "y", "op": "exp", "inputs": ["x"]}], "outputs": ["y", "x"]})");
  roundTrip(*fwd);
}

} // namespace
