//===- test/unit/codegen/PipelineLowerTest.cpp - real training graphs ----===//
//
// Lowering after the default pipeline (placement, copies, autodiff, optimizer
// updates) on the seed model and on random multi-layer models spread over one
// to four devices, with fan-out across devices and each optimizer: every plan
// verifies, round-trips through plan.bin, never lets two live values share
// memory, and orders every in-place update after the readers of the old value.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "plan/PlanIO.h"
#include "test/unit/SeedModel.h"
#include "test/unit/codegen/TestPlanChecks.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>

namespace mpc {
namespace {

plan::Plan compile(const std::string &model, uint64_t seed = 0) {
  return compiler::compileModel(model, {}, seed);
}

void expectSound(const plan::Plan &p) {
  EXPECT_TRUE(plan::verifyPlan(p).empty());
  test::expectNoLiveOverlap(p);
  test::expectUpdatesAfterReaders(p);
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  plan::Plan q = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
  EXPECT_EQ(plan::serializePlan(q), bytes);
}

TEST(PipelineLower, SeedModel) {
  plan::Plan p = compile(test::seedModelJson());
  expectSound(p);
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.params.size(), 6u);
  EXPECT_EQ(p.states.size(), 18u); // m, v, step per parameter
  for (const auto *refs : {&p.inputs, &p.params, &p.states})
    for (const plan::TensorRef &r : *refs)
      EXPECT_EQ(p.devices[r.device].buffers[r.buffer].region, plan::Region::Persistent) << r.name;
  // Two copies forward, two gradient copies back, each one send + one recv.
  std::multiset<std::pair<uint32_t, uint32_t>> sends, recvs;
  for (uint32_t d = 0; d < p.devices.size(); ++d)
    for (const plan::Instr &in : p.devices[d].instrs) {
      if (in.kind == plan::InstrKind::Send) sends.insert({d, in.peer});
      if (in.kind == plan::InstrKind::Recv) recvs.insert({in.peer, d});
    }
  std::multiset<std::pair<uint32_t, uint32_t>> want = {{0, 1}, {1, 2}, {2, 1}, {1, 0}};
  EXPECT_EQ(sends, want);
  EXPECT_EQ(recvs, want);
  for (const plan::TensorRef &w : p.params) {
    size_t updates = 0;
    for (const plan::Instr &in : p.devices[w.device].instrs)
      if (in.op == "adam_update" && in.output == w.buffer) ++updates;
    EXPECT_EQ(updates, 1u) << w.name;
  }
}

/// A random MLP: `layers` dense layers of width `width` spread over `stages`
/// device groups, random activations, residual adds that may cross devices.
std::string randomModel(unsigned seed) {
  std::mt19937 rng(seed);
  int layers = 2 + int(rng() % 5), stages = 1 + int(rng() % 4), width = 1 + int(rng() % 9);
  int batch = 1 + int(rng() % 16);
  const char *acts[] = {"relu", "tanh", "sigmoid", "gelu"};
  const char *opts[] = {R"({"sgd": {"lr": 0.1}})", R"({"sgd": {"lr": 0.1, "momentum": 0.9}})",
                        R"({"adam": {"lr": 0.01}})", R"({"adamw": {"lr": 0.01, "weight_decay": 0.1}})"};
  std::ostringstream params, nodes;
  std::string prev = "x";
  std::vector<std::string> acts_out;
  for (int l = 0; l < layers; ++l) {
    int out = l + 1 == layers ? 1 : width;
    std::string s = std::to_string(l), stage = "stage" + std::to_string(l * stages / layers);
    params << (l ? ",\n" : "") << "\"w" << s << "\": {\"shape\": [" << width << ", " << out
           << "], \"init\": {\"xavier\": {\"magnitude\": 2}}, \"device\": \"" << stage << "\"},\n"
           << "\"b" << s << "\": {\"shape\": [" << out << "], \"init\": \"zeros\", \"device\": \"" << stage << "\"}";
    nodes << "{\"name\": \"h" << s << "\", \"op\": \"matmul\", \"inputs\": [\"" << prev << "\", \"w" << s
          << "\"], \"device\": \"" << stage << "\"},\n"
          << "{\"name\": \"z" << s << "\", \"op\": \"add\", \"inputs\": [\"h" << s << "\", \"b" << s << "\"]},\n";
    prev = "z" + s;
    if (l + 1 < layers) {
      nodes << "{\"name\": \"a" << s << "\", \"op\": \"" << acts[rng() % 4] << "\", \"inputs\": [\"" << prev << "\"]},\n";
      prev = "a" + s;
      if (!acts_out.empty() && rng() % 2) {
        nodes << "{\"name\": \"r" << s << "\", \"op\": \"add\", \"inputs\": [\"" << prev << "\", \""
              << acts_out[rng() % acts_out.size()] << "\"]},\n";
        prev = "r" + s;
      }
      acts_out.push_back(prev);
    }
  }
  nodes << "{\"name\": \"loss\", \"op\": \"mse_loss\", \"inputs\": [\"" << prev << "\", \"y\"]}";
  std::ostringstream m;
  m << "{\"mpc\": 1, \"name\": \"mlp" << seed << "\",\n"
    << "\"inputs\": {\"x\": {\"shape\": [" << batch << ", " << width << "]}, \"y\": {\"shape\": [" << batch
    << ", 1]}},\n\"params\": {" << params.str() << "},\n\"nodes\": [" << nodes.str() << "],\n"
    << "\"loss\": \"loss\", \"outputs\": [\"" << prev << "\"], \"optimizer\": " << opts[rng() % 4] << "}\n";
  return m.str();
}

TEST(PipelineLower, RandomModelsGiveSoundPlans) {
  std::set<size_t> deviceCounts;
  std::set<std::string> optimizers;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::string model = randomModel(seed);
    SCOPED_TRACE(model);
    plan::Plan p = compile(model, seed);
    expectSound(p);
    EXPECT_FALSE(p.optimizer.kind.empty());
    EXPECT_TRUE(p.hasLoss);
    deviceCounts.insert(p.devices.size());
    optimizers.insert(p.optimizer.kind);
  }
  // The sample covers one to four devices and every optimizer.
  EXPECT_EQ(deviceCounts, (std::set<size_t>{1, 2, 3, 4}));
  EXPECT_EQ(optimizers, (std::set<std::string>{"sgd", "adam", "adamw"}));
}

} // namespace
} // namespace mpc
