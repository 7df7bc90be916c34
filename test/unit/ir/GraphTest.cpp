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

#include <map>
#include <queue>
#include <random>
#include <set>
#include <vector>

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

// uniqueName starts its search at a remembered floor (linear, not
// quadratic, in the nodes of one base); the answer is still the lowest free
// suffix, also after erase, eraseAll and rename free a lower one.
TEST(Graph, UniqueNameIsTheLowestFreeSuffix) {
  Graph g;
  Node *x = g.addInput("x", kT);
  std::vector<Node *> made;
  for (int i = 0; i < 6; ++i) {
    std::string name = g.uniqueName("p");
    EXPECT_EQ(name, i == 0 ? "p" : "p." + std::to_string(i));
    made.push_back(g.addOp(name, OpKind::Neg, {x}, {}, kT));
  }
  g.erase(made[2]); // p.2
  EXPECT_EQ(g.uniqueName("p"), "p.2");
  g.addOp("p.2", OpKind::Neg, {x}, {}, kT);
  EXPECT_EQ(g.uniqueName("p"), "p.6");
  g.eraseAll({made[4], made[1]}); // p.4, p.1
  EXPECT_EQ(g.uniqueName("p"), "p.1");
  g.addOp("p.1", OpKind::Neg, {x}, {}, kT);
  EXPECT_EQ(g.uniqueName("p"), "p.4");
  g.rename(made[3], "q"); // frees p.3
  EXPECT_EQ(g.uniqueName("p"), "p.3");
  g.addOp("p.3", OpKind::Neg, {x}, {}, kT);
  g.addOp("p.4", OpKind::Neg, {x}, {}, kT);
  g.addOp("p.6", OpKind::Neg, {x}, {}, kT); // taken by hand, past the floor
  EXPECT_EQ(g.uniqueName("p"), "p.7");
  // A name that only looks like a suffix frees nothing it should not.
  g.addOp("p.07", OpKind::Neg, {x}, {}, kT);
  g.erase(g.find("p.07"));
  EXPECT_EQ(g.uniqueName("p"), "p.7");
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

/// The definition topoOrder implements: Kahn's algorithm taking the ready
/// node of least id from one heap.
std::vector<Node *> referenceTopoOrder(const Graph &g) {
  std::map<const Node *, int> pending;
  std::map<const Node *, std::vector<Node *>> users;
  for (const auto &n : g.nodes()) {
    std::set<Node *> distinct(n->inputs.begin(), n->inputs.end());
    pending[n.get()] = int(distinct.size());
    for (Node *in : distinct) users[in].push_back(n.get());
  }
  auto later = [](const Node *a, const Node *b) { return a->id > b->id; };
  std::priority_queue<Node *, std::vector<Node *>, decltype(later)> ready(later);
  for (const auto &n : g.nodes())
    if (pending[n.get()] == 0) ready.push(n.get());
  std::vector<Node *> order;
  while (!ready.empty()) {
    Node *n = ready.top();
    ready.pop();
    order.push_back(n);
    for (Node *u : users[n])
      if (--pending[u] == 0) ready.push(u);
  }
  return order;
}

TEST(Graph, TopoOrderIsLeastIdFirstOnRandomGraphs) {
  // Random DAGs whose creation order is topological, then with operands
  // created after their users (as insert-copies rewires users to a new
  // copy) and some nodes erased, so that both the scan and its heap of
  // nodes that become ready behind it are used.
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    Graph g;
    int n = 1 + int(rng() % 60);
    std::vector<Node *> nodes;
    for (int i = 0; i < n; ++i) {
      if (i == 0 || rng() % 4 == 0) {
        nodes.push_back(g.addInput("n" + std::to_string(i), kT));
        continue;
      }
      std::vector<Node *> ins;
      for (int k = 0, m = 1 + int(rng() % 3); k < m; ++k)
        ins.push_back(nodes[rng() % nodes.size()]);
      nodes.push_back(g.addOp("n" + std::to_string(i), OpKind::Add, ins, {}, kT));
    }
    // A node gets, as an extra operand, a node created after it (which
    // uses only the first leaf or an earlier such node, so no cycle forms).
    std::vector<Node *> fresh{nodes[0]};
    for (int r = 0; r < n / 5; ++r) {
      Node *a = nodes[rng() % nodes.size()];
      if (!a->isOp()) continue;
      fresh.push_back(g.addOp("f" + std::to_string(r), OpKind::Add,
                              {fresh[rng() % fresh.size()]}, {}, kT));
      a->inputs.push_back(fresh.back());
    }
    std::vector<Node *> dead;
    for (const auto &m : g.nodes()) {
      bool used = false;
      for (const auto &u : g.nodes())
        for (Node *in : u->inputs) used = used || in == m.get();
      if (!used && m->isOp() && rng() % 3 == 0) dead.push_back(m.get());
    }
    g.eraseAll({dead.begin(), dead.end()});
    EXPECT_EQ(g.topoOrder(), referenceTopoOrder(g)) << "round " << round;
  }
}

} // namespace
