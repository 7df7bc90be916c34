//===- test/unit/ir/GraphTest.cpp - the graph container -------------------===//
//
// The parts of Graph that passes lean on to stay linear in the graph size:
// the gradient map's reverse index (rename), userMap, eraseAll, and
// topoOrder's id-indexed bookkeeping (ties by creation index, repeated
// operands, operands from another graph).
//
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"
#include "support/Error.h"

#include <gtest/gtest.h>

using namespace mpc;
using namespace mpc::ir;

namespace {

const TensorType kT{DType::F32, {2}};

TEST(GradientMap, SetEraseAndRenameKeepBothDirections) {
  GradientMap m;
  m.set("w0", "g");
  m.set("w1", "g"); // two entries may name one value
  m.set("w2", "h");
  m.renameValue("g", "g2");
  EXPECT_EQ(m.at("w0"), "g2");
  EXPECT_EQ(m.at("w1"), "g2");
  EXPECT_EQ(m.at("w2"), "h");
  m.set("w0", "h"); // replacing an entry drops it from the old value's index
  m.renameValue("g2", "g3");
  EXPECT_EQ(m.at("w0"), "h");
  EXPECT_EQ(m.at("w1"), "g3");
  EXPECT_EQ(m.erase("w1"), 1u);
  EXPECT_EQ(m.erase("w1"), 0u);
  m.renameValue("g3", "g4"); // no entry names it any more
  EXPECT_EQ(m.count("w1"), 0u);
  m.renameValue("h", "h2");
  EXPECT_EQ(m.at("w0"), "h2");
  EXPECT_EQ(m.at("w2"), "h2");
  EXPECT_EQ(m.size(), 2u);
  GradientMap same;
  same.set("w2", "h2");
  same.set("w0", "h2");
  EXPECT_TRUE(m == same);
}

TEST(Graph, RenameUpdatesGradientsOutputsAndLoss) {
  Graph g;
  Node *w = g.addParam("w", kT, InitSpec{});
  Node *d = g.addOp("d", OpKind::Add, {w, w}, {}, kT);
  g.gradients.set("w", "d");
  g.outputs = {"d"};
  g.loss = "d";
  g.rename(d, "w.grad");
  EXPECT_EQ(g.gradients.at("w"), "w.grad");
  EXPECT_EQ(g.outputs[0], "w.grad");
  EXPECT_EQ(g.loss, "w.grad");
  EXPECT_EQ(g.find("w.grad"), d);
  EXPECT_EQ(g.find("d"), nullptr);
  // The clone's map keeps its reverse index.
  auto c = g.clone();
  c->rename(c->find("w.grad"), "again");
  EXPECT_EQ(c->gradients.at("w"), "again");
  EXPECT_EQ(g.gradients.at("w"), "w.grad");
}

TEST(Graph, UserMapMatchesUsers) {
  Graph g;
  Node *x = g.addInput("x", kT);
  Node *a = g.addOp("a", OpKind::Add, {x, x}, {}, kT);
  Node *b = g.addOp("b", OpKind::Add, {a, x}, {}, kT);
  Node *c = g.addOp("c", OpKind::Add, {b, a}, {}, kT);
  auto users = g.userMap();
  EXPECT_EQ(users.count(c), 0u);
  for (const auto &n : g.nodes()) EXPECT_EQ(users[n.get()], g.users(n.get())) << n->name;
  EXPECT_EQ(users[x], (std::vector<Node *>{a, b}));
}

TEST(Graph, EraseAllKeepsCreationOrderAndRefusesUsedNodes) {
  Graph g;
  Node *x = g.addInput("x", kT);
  Node *a = g.addOp("a", OpKind::Add, {x, x}, {}, kT);
  Node *b = g.addOp("b", OpKind::Add, {a, x}, {}, kT);
  Node *c = g.addOp("c", OpKind::Add, {x, x}, {}, kT);
  EXPECT_THROW(g.eraseAll({a}), InternalError); // b still uses a
  ASSERT_EQ(g.nodes().size(), 4u);
  g.eraseAll({a, b});
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].get(), x);
  EXPECT_EQ(g.nodes()[1].get(), c);
  EXPECT_EQ(g.find("a"), nullptr);
  EXPECT_EQ(g.uniqueName("b"), "b"); // the name is free again
}

TEST(Graph, TopoOrderBreaksTiesByCreationAndReportsForeignOperands) {
  Graph g;
  Node *x = g.addInput("x", kT);
  Node *late = g.addOp("late", OpKind::Add, {x, x}, {}, kT);
  Node *y = g.addInput("y", kT);
  Node *both = g.addOp("both", OpKind::Add, {late, y}, {}, kT);
  EXPECT_EQ(g.topoOrder(), (std::vector<Node *>{x, late, y, both}));
  // An operand defined later in creation order.
  late->inputs = {y, y};
  EXPECT_EQ(g.topoOrder(), (std::vector<Node *>{x, y, late, both}));
  Graph other;
  late->inputs = {other.addInput("x", kT), x};
  EXPECT_THROW(g.topoOrder(), RuleError);
  late->inputs = {nullptr, x};
  EXPECT_THROW(g.topoOrder(), RuleError);
}

} // namespace
