//===- test/unit/codegen/LowerTest.cpp - lowering graphs to plans --------===//
//
// The seed model's training graph lowered to three device programs: devices,
// buffers and regions, send/recv pairs, in-place updates ordered after every
// reader, sends issued early, initial values, determinism; the precondition
// errors; and the memory plan on random graphs: no two values live at the
// same time share a byte, and reuse happens.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"
#include "ir/Init.h"
#include "plan/PlanIO.h"
#include "support/Error.h"
#include "test/unit/codegen/TestGraphs.h"
#include "test/unit/codegen/TestPlanChecks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace mpc {
namespace {

using plan::InstrKind;
using plan::Region;

plan::Plan lowerSeed(uint64_t seed = 0) {
  auto g = test::seedTrainingGraph();
  return codegen::lowerToPlan(*g, {seed});
}

const plan::Buffer &bufferNamed(const plan::DeviceProgram &d, const std::string &name) {
  for (const plan::Buffer &b : d.buffers)
    if (b.name == name) return b;
  throw std::runtime_error("no buffer " + name + " on " + d.device);
}

TEST(Lower, SeedModelHasThreeSortedDevices) {
  plan::Plan p = lowerSeed();
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.devices[0].device, "cpu:0");
  EXPECT_EQ(p.devices[1].device, "cpu:1");
  EXPECT_EQ(p.devices[2].device, "cpu:2");
  EXPECT_EQ(p.model, "regression3");
  EXPECT_TRUE(plan::verifyPlan(p).empty());
}

TEST(Lower, UserVisibleTensorsArePersistent) {
  plan::Plan p = lowerSeed();
  ASSERT_EQ(p.inputs.size(), 2u);
  ASSERT_EQ(p.params.size(), 6u);
  ASSERT_EQ(p.states.size(), 18u);
  ASSERT_EQ(p.outputs.size(), 1u);
  ASSERT_TRUE(p.hasLoss);
  std::vector<plan::TensorRef> all = p.inputs;
  all.insert(all.end(), p.params.begin(), p.params.end());
  all.insert(all.end(), p.states.begin(), p.states.end());
  all.insert(all.end(), p.outputs.begin(), p.outputs.end());
  all.push_back(p.loss);
  for (const plan::TensorRef &r : all) {
    const plan::Buffer &b = p.devices.at(r.device).buffers.at(r.buffer);
    EXPECT_EQ(b.region, Region::Persistent) << r.name;
    EXPECT_EQ(b.name, r.name);
    EXPECT_EQ(b.shape, r.shape);
  }
  EXPECT_EQ(p.params[0].name, "w0");
  EXPECT_EQ(p.params[1].name, "b0");
  EXPECT_EQ(p.devices[p.params[4].device].device, "cpu:2");
  EXPECT_EQ(p.inputs[0].name, "x");
  EXPECT_EQ(p.devices[p.loss.device].device, "cpu:2");
  EXPECT_EQ(bufferNamed(p.devices[0], "h0").region, Region::Arena);
  EXPECT_EQ(p.optimizer.kind, "adam");
  EXPECT_DOUBLE_EQ(p.optimizer.hyper.at("lr"), 0.001);
  EXPECT_DOUBLE_EQ(p.optimizer.hyper.at("beta2"), 0.999);
}

TEST(Lower, EveryCopyBecomesAMatchedSendRecvPair) {
  plan::Plan p = lowerSeed();
  struct End { size_t device; const plan::Instr *instr; };
  std::map<uint32_t, End> sends, recvs;
  for (size_t d = 0; d < p.devices.size(); ++d)
    for (const plan::Instr &in : p.devices[d].instrs) {
      if (in.kind == InstrKind::Send) {
        EXPECT_TRUE(sends.emplace(in.channel, End{d, &in}).second);
      } else if (in.kind == InstrKind::Recv) {
        EXPECT_TRUE(recvs.emplace(in.channel, End{d, &in}).second);
      } else {
        EXPECT_NE(in.op, "copy");
      }
    }
  // z0 -> cpu1, z1 -> cpu2 forward; z1.grad -> cpu1, z0.grad -> cpu0 backward.
  ASSERT_EQ(sends.size(), 4u);
  ASSERT_EQ(recvs.size(), 4u);
  std::set<std::pair<std::string, std::string>> routes;
  for (const auto &[ch, s] : sends) {
    ASSERT_TRUE(recvs.count(ch));
    const End &r = recvs.at(ch);
    EXPECT_EQ(s.instr->peer, r.device);
    EXPECT_EQ(r.instr->peer, s.device);
    EXPECT_EQ(s.instr->node, r.instr->node);
    const plan::Buffer &a = p.devices[s.device].buffers[s.instr->inputs.at(0)];
    const plan::Buffer &b = p.devices[r.device].buffers[r.instr->output];
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(b.name, s.instr->node);
    routes.insert({p.devices[s.device].device, p.devices[r.device].device});
  }
  std::set<std::pair<std::string, std::string>> want = {
      {"cpu:0", "cpu:1"}, {"cpu:1", "cpu:2"}, {"cpu:2", "cpu:1"}, {"cpu:1", "cpu:0"}};
  EXPECT_EQ(routes, want);
}

TEST(Lower, OptimizerUpdatesWriteTheirParameterInPlaceAfterEveryReader) {
  plan::Plan p = lowerSeed();
  size_t updates = 0;
  for (const plan::DeviceProgram &d : p.devices) {
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      const plan::Instr &in = d.instrs[i];
      if (in.op != "adam_update") continue;
      ++updates;
      ASSERT_EQ(in.inputs.size(), 5u);
      EXPECT_EQ(in.output, in.inputs[0]) << in.node;
      EXPECT_EQ(d.buffers[in.output].region, Region::Persistent);
      for (size_t j = i + 1; j < d.instrs.size(); ++j)
        for (uint32_t b : d.instrs[j].inputs)
          EXPECT_NE(b, in.output) << d.instrs[j].node << " reads " << d.buffers[b].name
                                  << " after its update";
    }
  }
  EXPECT_EQ(updates, 6u);
}

TEST(Lower, SendsLeaveRightAfterTheirDataIsReady) {
  plan::Plan p = lowerSeed();
  for (const plan::DeviceProgram &d : p.devices)
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      if (d.instrs[i].kind != InstrKind::Send) continue;
      uint32_t b = d.instrs[i].inputs[0];
      size_t j = i;
      while (j > 0 && d.instrs[j - 1].kind == InstrKind::Send) --j;
      // Either the instruction just before the run of sends produced b, or
      // nothing before it on this device does (b is a parameter or input).
      bool producedJustBefore = j > 0 && d.instrs[j - 1].output == b;
      bool producedEarlier = false;
      for (size_t k = 0; k + 1 < j; ++k)
        if (d.instrs[k].kind != InstrKind::Send && d.instrs[k].output == b) producedEarlier = true;
      EXPECT_TRUE(producedJustBefore || (!producedEarlier && d.buffers[b].region == Region::Persistent))
          << d.device << " instr " << i;
    }
}

TEST(Lower, ReceivesWaitUntilJustBeforeTheirFirstUse) {
  plan::Plan p = lowerSeed();
  for (const plan::DeviceProgram &d : p.devices)
    for (size_t i = 0; i < d.instrs.size(); ++i)
      if (d.instrs[i].kind == InstrKind::Recv) {
        ASSERT_LT(i + 1, d.instrs.size());
        const auto &next = d.instrs[i + 1].inputs;
        EXPECT_NE(std::find(next.begin(), next.end(), d.instrs[i].output), next.end())
            << d.device << " instr " << i;
      }
}

TEST(Lower, KernelsCarryOpNameAndAttributes) {
  plan::Plan p = lowerSeed();
  const plan::DeviceProgram &d1 = p.devices[1];
  const plan::Instr *h1 = nullptr;
  for (const plan::Instr &in : d1.instrs)
    if (in.node == "h1") h1 = &in;
  ASSERT_NE(h1, nullptr);
  EXPECT_EQ(h1->op, "matmul");
  EXPECT_EQ(std::get<bool>(h1->attrs.at("transpose_a")), false);
  EXPECT_EQ(d1.buffers[h1->inputs[0]].name, "z0.to.cpu1");
  EXPECT_EQ(d1.buffers[h1->inputs[1]].name, "w1");
  EXPECT_EQ(d1.buffers[h1->output].name, "h1");
}

TEST(Lower, InitialValuesAreTheInitialisersFloats) {
  auto g = test::seedTrainingGraph();
  plan::Plan p = codegen::lowerToPlan(*g, {7});
  EXPECT_EQ(p.seed, 7u);
  ASSERT_EQ(p.initialValues.size(), p.params.size() + p.states.size());
  const ir::Node *w1 = g->find("w1");
  std::vector<float> want = ir::initialValues(*w1->init, w1->type.shape, "w1", 7);
  ASSERT_EQ(p.initialValues[2].size(), want.size() * 4);
  EXPECT_EQ(std::memcmp(p.initialValues[2].data(), want.data(), want.size() * 4), 0);
  std::vector<float> b0(2);
  std::memcpy(b0.data(), p.initialValues[1].data(), 8);
  EXPECT_EQ(b0, (std::vector<float>{0.5f, 0.5f}));
  plan::Plan other = codegen::lowerToPlan(*g, {8});
  EXPECT_NE(p.initialValues[0], other.initialValues[0]);
}

TEST(Lower, IsDeterministic) {
  std::vector<uint8_t> a = plan::serializePlan(lowerSeed(3));
  std::vector<uint8_t> b = plan::serializePlan(lowerSeed(3));
  EXPECT_EQ(a, b);
}

TEST(Lower, ForwardOnlyGraphHasNoLossAndNoOptimizer) {
  auto g = test::seedTrainingGraph(/*training=*/false);
  plan::Plan p = codegen::lowerToPlan(*g, {0});
  EXPECT_FALSE(p.hasLoss);
  EXPECT_EQ(p.optimizer.kind, "");
  EXPECT_TRUE(p.states.empty());
  EXPECT_EQ(p.devices.size(), 3u);
  EXPECT_TRUE(plan::verifyPlan(p).empty());
}

TEST(Lower, RejectsUnplacedGraph) {
  auto g = test::seedTrainingGraph();
  g->stages &= ~unsigned(ir::kPlaced);
  try {
    codegen::lowerToPlan(*g, {0});
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("not placed"), std::string::npos) << e.what();
  }
}

TEST(Lower, RejectsGroupDevice) {
  auto g = test::seedTrainingGraph();
  g->find("h1")->device = "stage1";
  try {
    codegen::lowerToPlan(*g, {0});
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("'h1' (matmul) has no concrete device"), std::string::npos)
        << e.what();
  }
}

TEST(Lower, RejectsImplicitCrossDeviceUse) {
  auto g = test::seedTrainingGraph();
  ir::Node *h1 = g->find("h1");
  h1->inputs[0] = g->find("z0"); // bypass the copy
  try {
    codegen::lowerToPlan(*g, {0});
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("uses 'z0' (add) from cpu:0 without a copy"),
              std::string::npos)
        << e.what();
  }
}

TEST(MemoryPlan, SeedModelNeverOverlapsLiveValues) {
  plan::Plan p = lowerSeed();
  test::expectNoLiveOverlap(p);
  uint64_t arena = 0, noReuse = 0;
  for (const auto &d : p.devices) arena += d.arenaBytes, noReuse += d.noReuseBytes;
  EXPECT_LT(arena, noReuse) << "no memory was reused";
}

TEST(MemoryPlan, RandomGraphsNeverOverlapLiveValues) {
  uint64_t arena = 0, noReuse = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    auto g = test::randomGraph(seed, 1 + int(seed % 4), 30 + int(seed % 50));
    plan::Plan p = codegen::lowerToPlan(*g, {seed});
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_TRUE(plan::verifyPlan(p).empty());
    test::expectNoLiveOverlap(p);
    for (const auto &d : p.devices) arena += d.arenaBytes, noReuse += d.noReuseBytes;
  }
  EXPECT_LT(arena, noReuse);
}

TEST(MemoryPlan, ChainRunsInPlaceInOneSlotOrReusesTwoWithout) {
  ir::Graph g;
  g.name = "chain";
  ir::Builder b(g);
  b.device = "cpu:0";
  ir::Node *v = b.create(ir::OpKind::Fill, {}, {{"value", 1.0}, {"shape", ir::Shape{16, 16}}}, "f");
  for (int i = 0; i < 10; ++i) v = b.create(ir::OpKind::Relu, {v}, {}, "r" + std::to_string(i));
  g.outputs = {v->name};
  g.stages = ir::kShaped | ir::kPlaced | ir::kCopiesExplicit;
  // 10 arena values of 1 KiB (the last is the output): each relu writes over
  // the value it reads, which dies there.
  plan::Plan p = codegen::lowerToPlan(g, {0});
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].noReuseBytes, 10u * 1024);
  EXPECT_EQ(p.devices[0].arenaBytes, 1u * 1024);
  EXPECT_EQ(p.devices[0].persistentBytes, 1024u);
  EXPECT_TRUE(plan::verifyPlan(p).empty());
  test::expectNoLiveOverlap(p);
  // Without in-place reuse, at most two are live at once.
  plan::Plan off = codegen::lowerToPlan(g, {0, /*inPlace=*/false});
  EXPECT_EQ(off.devices[0].noReuseBytes, 10u * 1024);
  EXPECT_EQ(off.devices[0].arenaBytes, 2u * 1024);
  test::expectNoLiveOverlap(off);
}

/// The arena offset of the buffer named `name` on device 0.
uint64_t offsetOf(const plan::Plan &p, const std::string &name) {
  for (const plan::Buffer &b : p.devices[0].buffers)
    if (b.name == name) {
      EXPECT_EQ(b.region, plan::Region::Arena) << name;
      return b.offset;
    }
  ADD_FAILURE() << "no buffer " << name;
  return ~uint64_t(0);
}

TEST(MemoryPlan, InPlaceOnlyOverADyingOperandOfTheResultType) {
  ir::Graph g;
  g.name = "pairs";
  ir::Builder b(g);
  b.device = "cpu:0";
  auto fill = [&](ir::Shape s, const char *name) {
    return b.create(ir::OpKind::Fill, {}, {{"value", 1.0}, {"shape", s}}, name);
  };
  ir::Node *x = fill({16, 16}, "x"), *s = fill({16}, "s");
  // y = x + s: x is read again below and s is broadcast, so y takes neither.
  ir::Node *y = b.create(ir::OpKind::Add, {x, s}, {}, "y");
  // z = y * x: both die here, both have z's type; z takes the first.
  ir::Node *z = b.create(ir::OpKind::Mul, {y, x}, {}, "z");
  // w = softmax(z): softmax does not run in place.
  ir::Node *w = b.create(ir::OpKind::Softmax, {z}, {}, "w");
  // t = neg(w) with w also an output: persistent bytes are never taken.
  ir::Node *t = b.create(ir::OpKind::Neg, {w}, {}, "t");
  g.outputs = {w->name, t->name};
  g.stages = ir::kShaped | ir::kPlaced | ir::kCopiesExplicit;
  plan::Plan p = codegen::lowerToPlan(g, {0});
  EXPECT_TRUE(plan::verifyPlan(p).empty());
  test::expectNoLiveOverlap(p);
  EXPECT_NE(offsetOf(p, "y"), offsetOf(p, "x"));
  EXPECT_NE(offsetOf(p, "y"), offsetOf(p, "s"));
  EXPECT_EQ(offsetOf(p, "z"), offsetOf(p, "y"));
  for (const plan::Buffer &buf : p.devices[0].buffers)
    if (buf.name == "w" || buf.name == "t") {
      EXPECT_EQ(buf.region, plan::Region::Persistent) << buf.name;
    }
}

/// A value sent to another device is never written over in place, even
/// after the send (a margin for transports that read a buffer late).
TEST(MemoryPlan, InPlaceNeverOverASentValue) {
  ir::Graph g;
  g.name = "sent";
  ir::Builder b(g);
  b.device = "cpu:0";
  ir::Node *x = b.create(ir::OpKind::Fill, {}, {{"value", 1.0}, {"shape", ir::Shape{16, 16}}}, "x");
  ir::Node *a = b.create(ir::OpKind::Relu, {x}, {}, "a");
  b.device = "cpu:1";
  ir::Node *c = b.create(ir::OpKind::Copy, {a}, {}, "a.to.cpu1");
  ir::Node *d = b.create(ir::OpKind::Tanh, {c}, {}, "d");
  b.device = "cpu:0";
  ir::Node *e = b.create(ir::OpKind::Neg, {a}, {}, "e");
  ir::Node *f = b.create(ir::OpKind::Exp, {e}, {}, "f");
  g.outputs = {d->name, f->name};
  g.stages = ir::kShaped | ir::kPlaced | ir::kCopiesExplicit;
  plan::Plan p = codegen::lowerToPlan(g, {0});
  EXPECT_TRUE(plan::verifyPlan(p).empty());
  test::expectNoLiveOverlap(p);
  // relu takes x's bytes; neg does not take a's, which a send reads, though
  // a dies at neg.
  EXPECT_EQ(offsetOf(p, "a"), offsetOf(p, "x"));
  EXPECT_NE(offsetOf(p, "e"), offsetOf(p, "a"));
}

TEST(PlanStats, PrintsPerDeviceMemory) {
  plan::Plan p = lowerSeed();
  std::ostringstream os;
  codegen::printPlanStats(p, os);
  std::string s = os.str();
  EXPECT_NE(s.find("plan regression3: 3 devices"), std::string::npos) << s;
  EXPECT_NE(s.find("device cpu:1:"), std::string::npos) << s;
  EXPECT_NE(s.find("arena peak"), std::string::npos) << s;
  EXPECT_NE(s.find("no reuse"), std::string::npos) << s;
  EXPECT_NE(s.find("transfer cpu:0 -> cpu:1: 1 per step, 800 B"), std::string::npos) << s;
}

} // namespace
} // namespace mpc
