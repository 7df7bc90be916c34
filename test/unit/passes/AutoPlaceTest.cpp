//===- test/unit/passes/AutoPlaceTest.cpp - auto placement vs the optimum ===//
//
// The solver of --placement=auto (prefix sums, greedy sweep, binary search)
// against two independent oracles on generated chains of unequal layers:
// exhaustive enumeration of every cut on tiny chains and PipeDream's O(N^2 k)
// dynamic programme on larger ones, with and without memory limits and
// annotation bounds. Then the pass itself on the seed model.
//
//===----------------------------------------------------------------------===//
#include "passes/AutoPlace.h"

#include "test/unit/passes/PassTestUtil.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <random>

namespace mpc::passes {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool fitsMemory(const ChainProblem &p, int i, int j) {
  return p.memoryLimit <= 0 || stageBytes(p, i, j) <= p.memoryLimit;
}
bool startAllowed(const ChainProblem &p, int s, int at) {
  if (p.minStart.empty()) return true;
  return at >= p.minStart[size_t(s)] && at <= p.maxStart[size_t(s)];
}

/// Checks `starts` is a valid partition and returns its bottleneck.
double checkedBottleneck(const ChainProblem &p, const std::vector<int> &starts) {
  EXPECT_EQ(starts.size(), size_t(p.stages) + 1);
  EXPECT_EQ(starts.front(), 0);
  EXPECT_EQ(starts.back(), p.size());
  double worst = 0;
  for (int s = 0; s < p.stages; ++s) {
    int i = starts[size_t(s)], j = starts[size_t(s) + 1];
    EXPECT_LE(i, j);
    EXPECT_TRUE(startAllowed(p, s, i)) << "stage " << s << " starts at " << i;
    EXPECT_TRUE(fitsMemory(p, i, j)) << "stage " << s << " over the memory limit";
    worst = std::max(worst, stageCost(p, i, j));
  }
  return worst;
}

/// Oracle 1: every nondecreasing sequence of starts.
double bruteForce(const ChainProblem &p) {
  double best = kInf;
  std::vector<int> starts(size_t(p.stages) + 1, 0);
  starts.back() = p.size();
  auto rec = [&](auto &&self, int s, double worst) -> void {
    if (s == p.stages) {
      best = std::min(best, worst);
      return;
    }
    int i = starts[size_t(s)];
    int from = s + 1 == p.stages ? p.size() : i, to = p.size();
    for (int j = from; j <= to; ++j) {
      if (!startAllowed(p, s + 1, j) || !fitsMemory(p, i, j)) continue;
      starts[size_t(s) + 1] = j;
      self(self, s + 1, std::max(worst, stageCost(p, i, j)));
    }
  };
  if (startAllowed(p, 0, 0)) rec(rec, 0, 0.0);
  return best;
}

/// Oracle 2: A[s][j] = min over i of max(A[s-1][i], cost(i, j)).
double dynamicProgramme(const ChainProblem &p) {
  int n = p.size(), k = p.stages;
  std::vector<std::vector<double>> a(size_t(k) + 1, std::vector<double>(size_t(n) + 1, kInf));
  a[0][0] = startAllowed(p, 0, 0) ? 0.0 : kInf;
  for (int s = 1; s <= k; ++s)
    for (int j = 0; j <= n; ++j) {
      if (!startAllowed(p, s, j) || (s == k && j != n)) continue;
      for (int i = 0; i <= j; ++i) {
        if (a[size_t(s) - 1][size_t(i)] == kInf || !fitsMemory(p, i, j)) continue;
        a[size_t(s)][size_t(j)] = std::min(
            a[size_t(s)][size_t(j)], std::max(a[size_t(s) - 1][size_t(i)], stageCost(p, i, j)));
      }
    }
  return a[size_t(k)][size_t(n)];
}

/// A chain of unequal layers: costs spread over two orders of magnitude.
ChainProblem randomChain(std::mt19937_64 &rng, int n, int k, bool memory, bool pins) {
  std::uniform_int_distribution<int> flops(1, 200), bytes(1, 60), cut(0, 80);
  ChainProblem p;
  p.stages = k;
  p.transferCost = (rng() % 2) ? 1.0 : 0.25;
  for (int t = 0; t < n; ++t) {
    p.flops.push_back(double(flops(rng) * ((rng() % 4) == 0 ? 10 : 1)));
    p.bytes.push_back(double(bytes(rng)));
  }
  p.cutBytes.assign(size_t(n) + 1, 0.0);
  for (int c = 1; c < n; ++c) p.cutBytes[size_t(c)] = double(cut(rng));
  if (memory) {
    double total = 0, biggest = 0;
    for (double b : p.bytes) total += b, biggest = std::max(biggest, b);
    // Between "barely fits" and "cannot fit": both outcomes get tested.
    p.memoryLimit = std::max(biggest * 0.9, total / k * (0.8 + 0.6 * double(rng() % 100) / 100));
  }
  if (pins) {
    // Pins in stage order along the chain, as annotations give them.
    p.minStart.assign(size_t(k) + 1, 0);
    p.maxStart.assign(size_t(k) + 1, n);
    int at = 0;
    for (int s = 0; s < k && at < n; ++s) {
      if (rng() % 2) continue;
      at += int(rng() % uint64_t(std::max(1, n - at)));
      if (at >= n) break;
      for (int st = 0; st <= k; ++st) {
        if (s < st) p.minStart[size_t(st)] = std::max(p.minStart[size_t(st)], at + 1);
        else p.maxStart[size_t(st)] = std::min(p.maxStart[size_t(st)], at);
      }
      ++at;
    }
    p.minStart[0] = p.maxStart[0] = 0;
    p.minStart[size_t(k)] = p.maxStart[size_t(k)] = n;
  }
  return p;
}

void expectOptimal(const ChainProblem &p, double oracle) {
  ChainResult r = partitionChain(p);
  if (oracle == kInf) {
    EXPECT_FALSE(r.partition) << "the oracle finds no feasible partition";
    return;
  }
  ASSERT_TRUE(r.partition) << "the oracle finds bottleneck " << oracle;
  double got = checkedBottleneck(p, r.partition->starts);
  EXPECT_NEAR(got, oracle, 1e-9 * std::max(1.0, oracle));
  EXPECT_DOUBLE_EQ(got, r.partition->bottleneck);
}

TEST(AutoPlace, MatchesExhaustiveSearchOnSmallChains) {
  std::mt19937_64 rng(20261202);
  for (int trial = 0; trial < 400; ++trial) {
    int n = 1 + int(rng() % 7), k = 1 + int(rng() % 4);
    ChainProblem p = randomChain(rng, n, k, trial % 3 == 1, trial % 4 >= 2);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectOptimal(p, bruteForce(p));
  }
}

TEST(AutoPlace, MatchesDynamicProgrammeOnLargerChains) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    int n = 10 + int(rng() % 50), k = 2 + int(rng() % 6);
    ChainProblem p = randomChain(rng, n, k, trial % 3 == 1, trial % 5 == 2);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectOptimal(p, dynamicProgramme(p));
  }
}

TEST(AutoPlace, OraclesAgree) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 200; ++trial) {
    ChainProblem p = randomChain(rng, 1 + int(rng() % 7), 1 + int(rng() % 3), trial % 2, trial % 3);
    EXPECT_EQ(bruteForce(p), dynamicProgramme(p)) << "trial " << trial;
  }
}

TEST(AutoPlace, EqualLayersSplitEvenly) {
  ChainProblem p;
  p.stages = 3;
  p.flops.assign(6, 10.0);
  p.bytes.assign(6, 1.0);
  p.cutBytes.assign(7, 0.0);
  ChainResult r = partitionChain(p);
  ASSERT_TRUE(r.partition);
  EXPECT_EQ(r.partition->starts, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(r.partition->bottleneck, 20.0);
}

TEST(AutoPlace, ReportsWhereMemoryRunsOut) {
  ChainProblem p;
  p.stages = 2;
  p.flops.assign(4, 1.0);
  p.bytes = {10, 10, 10, 10};
  p.cutBytes.assign(5, 0.0);
  p.memoryLimit = 15;
  ChainResult r = partitionChain(p);
  EXPECT_FALSE(r.partition);
  EXPECT_EQ(r.blockedAt, 2); // stage 0 holds position 0, stage 1 position 1
}

//===----------------------------------------------------------------------===//
// The pass on graphs.
//===----------------------------------------------------------------------===//

const char *kChain = R"json({
  "mpc": 1, "name": "chain",
  "inputs": { "x": {"shape": [64, 32]}, "y": {"shape": [64, 4]} },
  "params": {
    "w0": {"shape": [32, 256], "init": "zeros"}, "w1": {"shape": [256, 256], "init": "zeros"},
    "w2": {"shape": [256, 32], "init": "zeros"}, "w3": {"shape": [32, 4], "init": "zeros"}
  },
  "nodes": [
    {"name": "h0", "op": "matmul", "inputs": ["x", "w0"]},
    {"name": "a0", "op": "relu", "inputs": ["h0"]},
    {"name": "h1", "op": "matmul", "inputs": ["a0", "w1"]},
    {"name": "a1", "op": "relu", "inputs": ["h1"]},
    {"name": "h2", "op": "matmul", "inputs": ["a1", "w2"]},
    {"name": "a2", "op": "relu", "inputs": ["h2"]},
    {"name": "h3", "op": "matmul", "inputs": ["a2", "w3"]},
    {"name": "loss", "op": "mse_loss", "inputs": ["h3", "y"]}
  ],
  "loss": "loss"
})json";

TEST(AutoPlacePass, SplitsTheChainAndColocatesLeaves) {
  auto g = test::parse(kChain);
  PassOptions o;
  o.placement = "auto";
  o.devices = {"cpu:0", "cpu:1"};
  test::runPasses(*g, "place", o);
  // h1 (2*64*256*256 flops) dominates: it gets a device of its own.
  EXPECT_EQ(g->find("h0")->device, "cpu:0");
  EXPECT_EQ(g->find("h1")->device, "cpu:1");
  EXPECT_EQ(g->find("loss")->device, "cpu:1");
  EXPECT_EQ(g->find("w1")->device, "cpu:1");
  EXPECT_EQ(g->find("x")->device, "cpu:0");
  EXPECT_TRUE(g->has(ir::kPlaced));
}

TEST(AutoPlacePass, AnnotationsAreConstraints) {
  auto g = test::parse(kChain);
  g->find("h2")->device = "cpu:0"; // forces h0..h2 onto cpu:0
  PassOptions o;
  o.placement = "auto";
  o.devices = {"cpu:0", "cpu:1"};
  test::runPasses(*g, "place", o);
  for (const char *n : {"h0", "a0", "h1", "a1", "h2"}) EXPECT_EQ(g->find(n)->device, "cpu:0") << n;
}

TEST(AutoPlacePass, UnsatisfiableMemoryNamesTheOp) {
  auto g = test::parse(kChain);
  PassOptions o;
  o.placement = "auto";
  o.devices = {"cpu:0", "cpu:1"};
  o.deviceMemory = 200000; // w1 alone is 262144 bytes
  passes::PassContext ctx;
  ctx.options = o;
  try {
    passes::createPass("place")->run(*g, ctx);
    FAIL() << "expected an error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("'h1' (matmul)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--device-memory"), std::string::npos) << e.what();
  }
}


/// An MLP chain x -> (matmul, relu)* with random, unequal widths.
std::string randomMlp(std::mt19937_64 &rng, int layers) {
  std::string params, nodes, prev = "x";
  int width = 4 + int(rng() % 60), batch = 8 + int(rng() % 24);
  std::string inputs = "\"x\": {\"shape\": [" + std::to_string(batch) + ", " +
                       std::to_string(width) + "]}";
  for (int l = 0; l < layers; ++l) {
    int out = 2 + int(rng() % 120);
    std::string w = "w" + std::to_string(l), h = "h" + std::to_string(l),
                a = "a" + std::to_string(l);
    params += std::string(l ? ", " : "") + "\"" + w + "\": {\"shape\": [" +
              std::to_string(width) + ", " + std::to_string(out) + "], \"init\": \"zeros\"}";
    nodes += std::string(l ? ", " : "") + "{\"name\": \"" + h +
             "\", \"op\": \"matmul\", \"inputs\": [\"" + prev + "\", \"" + w + "\"]}, " +
             "{\"name\": \"" + a + "\", \"op\": \"relu\", \"inputs\": [\"" + h + "\"]}";
    prev = a;
    width = out;
  }
  return "{\"mpc\": 1, \"name\": \"mlp\", \"inputs\": {" + inputs + "}, \"params\": {" + params +
         "}, \"nodes\": [" + nodes + "], \"outputs\": [\"" + prev + "\"]}";
}

/// The cost model of docs/passes.md, computed directly on the graph: FLOPs
/// of the stage's ops plus the bytes of the values (ops, or leaves at their
/// first consumer) that cross the stage's end.
double graphBottleneck(const ir::Graph &g, const std::vector<ir::Node *> &ops,
                       const std::vector<int> &stageOf, int k) {
  std::map<const ir::Node *, int> pos;
  for (size_t t = 0; t < ops.size(); ++t) pos[ops[t]] = int(t);
  std::vector<double> cost(size_t(k), 0.0);
  for (size_t t = 0; t < ops.size(); ++t) {
    const ir::Node &n = *ops[t];
    std::vector<ir::TensorType> types;
    for (const ir::Node *in : n.inputs) types.push_back(in->type);
    cost[size_t(stageOf[t])] +=
        n.info().flops ? n.info().flops(types, n.type, n.attrs) : double(n.type.numElements());
  }
  for (const auto &v : g.nodes()) {
    int home = -1, last = -1;
    for (const ir::Node *u : g.users(v.get())) {
      int p = pos.at(u);
      home = home < 0 ? p : std::min(home, p);
      last = std::max(last, p);
    }
    if (v->isOp()) home = pos.at(v.get());
    if (home < 0) continue;
    // The value crosses the end of every stage from its home's to the one
    // before its last consumer's; each such stage pays for sending it.
    for (int s = stageOf[size_t(home)]; s < (last < 0 ? 0 : stageOf[size_t(last)]); ++s) {
      // Only non-empty stages end at a cut of their own.
      bool nonEmpty = std::find(stageOf.begin(), stageOf.end(), s) != stageOf.end();
      if (nonEmpty) cost[size_t(s)] += double(v->type.byteSize());
    }
  }
  return *std::max_element(cost.begin(), cost.end());
}

TEST(AutoPlacePass, MatchesBruteForceOnGeneratedMlps) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 40; ++trial) {
    int layers = 2 + int(rng() % 3), k = 2 + int(rng() % 2);
    auto g = test::parse(randomMlp(rng, layers));
    PassOptions o;
    o.placement = "auto";
    for (int d = 0; d < k; ++d) o.devices.push_back("cpu:" + std::to_string(d));
    test::runPasses(*g, "place", o);
    std::vector<ir::Node *> ops;
    for (ir::Node *n : g->topoOrder())
      if (n->isOp()) ops.push_back(n);
    std::vector<int> chosen;
    for (ir::Node *n : ops) chosen.push_back(n->device[4] - '0');
    for (size_t t = 1; t < chosen.size(); ++t) ASSERT_LE(chosen[t - 1], chosen[t]);
    double got = graphBottleneck(*g, ops, chosen, k);

    // Every assignment of contiguous, possibly empty stages.
    double best = kInf;
    std::vector<int> stageOf(ops.size(), 0);
    auto rec = [&](auto &&self, size_t t, int s) -> void {
      if (t == ops.size()) {
        best = std::min(best, graphBottleneck(*g, ops, stageOf, k));
        return;
      }
      for (int st = s; st < k; ++st) {
        stageOf[t] = st;
        self(self, t + 1, st);
      }
    };
    rec(rec, 0, 0);
    EXPECT_NEAR(got, best, 1e-9 * best) << "trial " << trial;
  }
}

} // namespace
} // namespace mpc::passes
