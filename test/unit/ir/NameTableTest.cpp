//===- test/unit/ir/NameTableTest.cpp - a graph's nodes by name -----------===//
//
// NameTable against std::map on random inserts, lookups and erasures (the
// erasures exercise the backward shift that replaces tombstones, across the
// table's wrap-around and its growth), and the registration each node
// carries, which the verifier checks: a name changed behind the table's back
// is caught.
//
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"
#include "ir/NameTable.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace mpc::ir;

namespace {

std::string nodeName(unsigned k) {
  std::string s = "n";
  s += std::to_string(k);
  return s;
}

TEST(NameTable, AgreesWithAMapUnderRandomInsertsAndErasures) {
  std::mt19937 rng(7);
  std::vector<std::unique_ptr<Node>> pool;
  std::vector<Node *> byId;
  NameTable table;
  std::map<std::string, Node *> want;
  for (int step = 0; step < 20000; ++step) {
    // Few distinct names, so inserts clash and erasures hit long runs.
    std::string name = nodeName(rng() % 700);
    if (rng() % 3 != 0) {
      auto n = std::make_unique<Node>();
      n->name = name;
      n->id = int(pool.size());
      bool fresh = !want.count(name);
      ASSERT_EQ(table.insert(n.get()), fresh) << name;
      if (fresh) want[name] = n.get();
      byId.push_back(n.get());
      pool.push_back(std::move(n));
    } else if (auto it = want.find(name); it != want.end()) {
      ASSERT_TRUE(table.erase(it->second)) << name;
      want.erase(it);
    } else {
      ASSERT_FALSE(table.erase(nullptr));
    }
    ASSERT_EQ(table.size(), want.size());
    if (step % 97 == 0)
      for (int k = 0; k < 700; ++k) {
        std::string probe = nodeName(unsigned(k));
        auto it = want.find(probe);
        ASSERT_EQ(table.find(probe), it == want.end() ? nullptr : it->second) << probe;
      }
  }
  // Registered nodes say so, under their own names; erased ones do not.
  for (const Node *n : byId) {
    auto it = want.find(n->name);
    EXPECT_EQ(NameTable::registeredUnderOwnName(*n), it != want.end() && it->second == n)
        << n->name;
  }
}

TEST(NameTable, EraseTakesOnlyANodeRegisteredInThatTable) {
  Node a, b, c;
  a.name = nodeName(1);
  b.name = nodeName(2);
  c.name = nodeName(3);
  NameTable table, other;
  ASSERT_TRUE(table.insert(&a));
  ASSERT_TRUE(table.insert(&b));
  ASSERT_TRUE(other.insert(&c));
  EXPECT_FALSE(table.erase(&c)); // registered, but in another table
  EXPECT_FALSE(table.erase(nullptr));
  EXPECT_TRUE(table.erase(&a));
  EXPECT_FALSE(table.erase(&a)); // not any more
  EXPECT_FALSE(NameTable::registeredUnderOwnName(a));
  EXPECT_EQ(table.find(a.name), nullptr);
  EXPECT_EQ(table.find(b.name), &b);
  EXPECT_EQ(table.size(), 1u);
}

TEST(NameTable, ANameChangedBehindItsBackIsCaught) {
  Graph g;
  Node *x = g.addInput("x", {DType::F32, {2}});
  g.addInput("y", {DType::F32, {2}});
  EXPECT_TRUE(g.namesRegistered());
  x->name.push_back('z'); // "xz", not through Graph::rename
  EXPECT_FALSE(g.namesRegistered());
  EXPECT_EQ(g.find("x"), nullptr);
  EXPECT_EQ(g.find("xz"), nullptr);
  std::vector<std::string> problems = verifyGraph(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("name not registered in the graph"), std::string::npos)
      << problems[0];
}

TEST(NameTable, RenameMovesTheEntry) {
  Graph g;
  Node *x = g.addInput("x", {DType::F32, {2}});
  g.rename(x, "x2");
  EXPECT_EQ(g.find("x"), nullptr);
  EXPECT_EQ(g.find("x2"), x);
  EXPECT_TRUE(g.namesRegistered());
  EXPECT_EQ(g.uniqueName("x2"), "x2.1");
  EXPECT_EQ(g.uniqueName("x"), "x");
}

} // namespace
