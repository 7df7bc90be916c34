//===- test/unit/runtime/CollectiveTest.cpp - collective instructions --------===//
//
// A model with all_reduce, reduce_scatter and all_gather over three CPU
// devices compiles to one collective instruction per member, survives the
// plan.bin round trip, and runs on the in-process transport to the sum in
// the group's order, every member's bits equal, and to the reference
// interpreter's float64 values within f32 rounding. The verifier refuses
// each way a plan file can get a collective wrong: members in another order
// (a deadlock), a member missing, another group or op, a device twice in the
// group, channel ids shared with another instruction, a result over its own
// contribution, a result of the wrong type.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "ir/Interpreter.h"
#include "plan/Collective.h"
#include "plan/PlanIO.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

namespace mpc {
namespace {

const char *kModel = R"({"mpc": 1, "name": "collectives",
 "inputs": {"a": {"shape": [6, 4], "device": "cpu:0"},
            "b": {"shape": [6, 4], "device": "cpu:1"},
            "c": {"shape": [6, 4], "device": "cpu:2"}},
 "nodes": [
   {"name": "s0", "op": "all_reduce", "inputs": ["a", "b", "c"], "device": "cpu:0"},
   {"name": "s1", "op": "all_reduce", "inputs": ["a", "b", "c"], "device": "cpu:1"},
   {"name": "s2", "op": "all_reduce", "inputs": ["a", "b", "c"], "device": "cpu:2"},
   {"name": "r0", "op": "reduce_scatter", "inputs": ["a", "b", "c"], "attrs": {"shard": 0}, "device": "cpu:0"},
   {"name": "r1", "op": "reduce_scatter", "inputs": ["a", "b", "c"], "attrs": {"shard": 1}, "device": "cpu:1"},
   {"name": "r2", "op": "reduce_scatter", "inputs": ["a", "b", "c"], "attrs": {"shard": 2}, "device": "cpu:2"},
   {"name": "g0", "op": "all_gather", "inputs": ["r0", "r1", "r2"], "device": "cpu:0"},
   {"name": "g1", "op": "all_gather", "inputs": ["r0", "r1", "r2"], "device": "cpu:1"},
   {"name": "g2", "op": "all_gather", "inputs": ["r0", "r1", "r2"], "device": "cpu:2"}
 ],
 "outputs": ["s0", "s1", "s2", "r0", "r1", "r2", "g0", "g1", "g2"]})";

plan::Plan collectivePlan() {
  return compiler::compileModel(kModel);
}

/// The verifier's problems, joined.
std::string problems(const plan::Plan &p) {
  std::string all;
  for (const std::string &s : plan::verifyPlan(p)) all += s + "\n";
  return all;
}

/// Index of the instruction of device `d` that runs collective `op`.
size_t collectiveAt(const plan::Plan &p, size_t d, const std::string &op) {
  const auto &instrs = p.devices[d].instrs;
  for (size_t i = 0; i < instrs.size(); ++i)
    if (instrs[i].kind == plan::InstrKind::Collective && instrs[i].op == op) return i;
  ADD_FAILURE() << "no " << op << " on device " << d;
  return 0;
}

TEST(Collective, OneInstructionPerMemberAndTheRoundTrip) {
  plan::Plan p = collectivePlan();
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(problems(p), "");
  for (size_t d = 0; d < 3; ++d)
    for (const char *op : {"all_reduce", "reduce_scatter", "all_gather"}) {
      const plan::Instr &in = p.devices[d].instrs[collectiveAt(p, d, op)];
      EXPECT_EQ(in.group, (std::vector<uint32_t>{0, 1, 2})) << op;
      EXPECT_EQ(in.inputs.size(), 1u);
    }
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  plan::Plan back = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
  std::ostringstream a, b;
  plan::printPlan(p, a);
  plan::printPlan(back, b);
  EXPECT_EQ(a.str(), b.str());
  EXPECT_EQ(plan::serializePlan(back), bytes);
}

TEST(Collective, MessagesFollowTheDocumentedChannels) {
  plan::Plan p = collectivePlan();
  const plan::Instr &in = p.devices[1].instrs[collectiveAt(p, 1, "all_reduce")];
  plan::CollectiveShape s = plan::collectiveShape(p.devices[1], 1, in);
  EXPECT_EQ(s.member, 1u);
  EXPECT_EQ(s.elements, 24);
  std::vector<plan::CollectiveMessage> m = plan::collectiveMessages(in, s);
  ASSERT_EQ(m.size(), 8u); // 2 sends + 2 receives per phase
  // Phase 0: part i of the contribution goes to member i.
  EXPECT_TRUE(m[0].send);
  EXPECT_EQ(m[0].peer, 0u);
  EXPECT_EQ(m[0].channel, in.channel + 0 * 9 + 1 * 3 + 0);
  EXPECT_EQ(m[0].part.begin, 0);
  EXPECT_EQ(m[0].part.end, 8);
  // Phase 1: this member's part of the sum goes to every other member.
  EXPECT_TRUE(m[4].send);
  EXPECT_EQ(m[4].channel, in.channel + 1 * 9 + 1 * 3 + 0);
  EXPECT_EQ(m[4].part.begin, 8);
  EXPECT_EQ(m[4].part.end, 16);
}

TEST(Collective, RunsToTheReferenceWithEqualBitsOnEveryMember) {
  plan::Plan p = collectivePlan();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::map<std::string, std::vector<float>> in;
  for (const char *name : {"a", "b", "c"}) {
    std::vector<float> v(24);
    for (float &x : v) x = normal(rng) * 1000.f;
    in[name] = v;
  }
  for (unsigned threads : {1u, 3u}) {
    runtime::Executor exec(p, runtime::cpuBackendFactory(), nullptr, {}, threads);
    for (const plan::TensorRef &t : p.inputs)
      exec.write(t, in[t.name].data(), in[t.name].size() * 4);
    exec.step();
    std::map<std::string, std::vector<float>> out;
    for (const plan::TensorRef &t : p.outputs) {
      std::vector<float> v(size_t(t.numElements()));
      exec.read(t, v.data(), v.size() * 4);
      out[t.name] = v;
    }
    std::vector<float> want(24);
    for (size_t k = 0; k < 24; ++k) want[k] = (in["a"][k] + in["b"][k]) + in["c"][k];
    for (const char *s : {"s0", "s1", "s2", "g0", "g1", "g2"})
      EXPECT_EQ(std::memcmp(out[s].data(), want.data(), 24 * 4), 0) << s << ", " << threads;
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(std::memcmp(out["r" + std::to_string(r)].data(), want.data() + 8 * r, 8 * 4), 0)
          << "r" << r << ", " << threads;
  }
}

TEST(Collective, RunsToTheReferenceInterpreter) {
  // The float64 reference kernels (ir/ops/Collective.cpp) on the compiled
  // graph, against the plan run on the CPU backend: within f32 rounding.
  std::unique_ptr<ir::Graph> g = compiler::compileGraph(kModel);
  plan::Plan p = compiler::compileModel(kModel);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  std::map<std::string, ir::RefTensor> feed;
  runtime::Executor exec(p, runtime::cpuBackendFactory());
  for (const plan::TensorRef &t : p.inputs) {
    std::vector<float> v(size_t(t.numElements()));
    for (float &x : v) x = normal(rng);
    exec.write(t, v.data(), v.size() * 4);
    ir::RefTensor r(t.shape);
    for (size_t k = 0; k < v.size(); ++k) r.data[k] = double(v[k]);
    feed[t.name] = r;
  }
  exec.step();
  ir::Interpreter interp(*g);
  std::map<std::string, ir::RefTensor> want = interp.step(feed);
  for (const plan::TensorRef &t : p.outputs) {
    std::vector<float> got = exec.readFloats(t);
    const ir::RefTensor &w = want.at(t.name);
    ASSERT_EQ(got.size(), w.data.size()) << t.name;
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], w.data[k], 1e-5 * (1 + std::abs(w.data[k]))) << t.name << "[" << k << "]";
  }
}

TEST(Collective, MembersInAnotherOrderDeadlock) {
  plan::Plan p = collectivePlan();
  auto &instrs = p.devices[2].instrs;
  std::swap(instrs[collectiveAt(p, 2, "all_reduce")], instrs[collectiveAt(p, 2, "reduce_scatter")]);
  std::string why = problems(p);
  EXPECT_NE(why.find("the schedule deadlocks: cpu:"), std::string::npos) << why;
  EXPECT_NE(why.find("the members of a group must run their collectives in the same order"),
            std::string::npos)
      << why;
}

TEST(Collective, AMissingMemberIsNamed) {
  plan::Plan p = collectivePlan();
  auto &instrs = p.devices[2].instrs;
  plan::Instr &in = instrs[collectiveAt(p, 2, "all_gather")];
  in.kind = plan::InstrKind::Kernel; // no longer a member: a copy of its input
  in.op = "copy";
  in.group.clear();
  in.output = in.inputs[0];
  std::string why = problems(p);
  EXPECT_NE(why.find("has no member on cpu:2, which is in its group"), std::string::npos) << why;
}

TEST(Collective, GroupsOpsAndChannelsMustAgree) {
  {
    plan::Plan p = collectivePlan();
    p.devices[1].instrs[collectiveAt(p, 1, "all_reduce")].group = {0, 1, 1};
    std::string why = problems(p);
    EXPECT_NE(why.find("cpu:1 is in the group twice"), std::string::npos) << why;
  }
  {
    plan::Plan p = collectivePlan();
    p.devices[1].instrs[collectiveAt(p, 1, "all_reduce")].group = {1, 0, 2};
    std::string why = problems(p);
    EXPECT_NE(why.find("in its op or group"), std::string::npos) << why;
  }
  {
    plan::Plan p = collectivePlan();
    plan::Instr &in = p.devices[0].instrs[collectiveAt(p, 0, "all_reduce")];
    in.op = "matmul";
    std::string why = problems(p);
    EXPECT_NE(why.find("'matmul' is not a collective"), std::string::npos) << why;
  }
  {
    // The all_gather's ids moved onto the all_reduce's.
    plan::Plan p = collectivePlan();
    uint32_t to = p.devices[0].instrs[collectiveAt(p, 0, "all_reduce")].channel + 1;
    for (size_t d = 0; d < 3; ++d) p.devices[d].instrs[collectiveAt(p, d, "all_gather")].channel = to;
    std::string why = problems(p);
    EXPECT_NE(why.find("overlap those of"), std::string::npos) << why;
  }
  {
    // The result written over the contribution it reads.
    plan::Plan p = collectivePlan();
    plan::Instr &in = p.devices[1].instrs[collectiveAt(p, 1, "all_reduce")];
    in.output = in.inputs[0];
    std::string why = problems(p);
    EXPECT_NE(why.find("shares bytes with its contribution"), std::string::npos) << why;
  }
  {
    // A result buffer of another type: the reduce_scatter's part as an all_reduce.
    plan::Plan p = collectivePlan();
    for (size_t d = 0; d < 3; ++d) p.devices[d].instrs[collectiveAt(p, d, "reduce_scatter")].op = "all_reduce";
    std::string why = problems(p);
    EXPECT_NE(why.find("gives f32[6,4], but its result buffer is f32[2,4]"), std::string::npos) << why;
  }
}

} // namespace
} // namespace mpc
