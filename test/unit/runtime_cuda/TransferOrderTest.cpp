//===- test/unit/runtime_cuda/TransferOrderTest.cpp - NCCL issue order --===//
//
// The global order of transfers that every rank's NCCL proxy follows
// (TransferOrder.h), on pipelined plans under each schedule:
//   * it lists every send/recv pair once, and two computations agree;
//   * it is consistent with each device's program: a device's receives come
//     in program order, and every transfer comes after the receives that
//     precede its send;
//   * the proxy protocol (NcclProxy.h) runs to the end of two steps in a
//     model where every NCCL call blocks until its peer makes the matching
//     one, for several rank maps; the same model deadlocks when the ranks
//     issue in each sender's program order instead (the control).
// Pure: runs without a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/TransferOrder.h"

#include "compiler/Compile.h"
#include "test/unit/SeedModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace mpc::runtime::cuda {
namespace {

plan::Plan pipelined(const std::vector<std::string> &devices, const std::string &schedule) {
  passes::PassOptions options;
  options.devices = devices;
  options.microbatches = 4;
  options.schedule = schedule;
  return compiler::compileModel(test::seedModelJson(), options, /*seed=*/1);
}

/// Two devices that each send to the other before receiving.
plan::Plan exchangePlan() {
  plan::Plan p;
  for (int d = 0; d < 2; ++d) {
    plan::DeviceProgram prog;
    prog.device = "gpu:" + std::to_string(d);
    prog.buffers.resize(1);
    prog.buffers[0].bytes = 16;
    plan::Instr send, recv;
    send.kind = plan::InstrKind::Send;
    send.channel = uint32_t(d + 1);
    send.peer = uint32_t(1 - d);
    send.inputs = {0};
    recv.kind = plan::InstrKind::Recv;
    recv.channel = uint32_t(2 - d);
    recv.peer = uint32_t(1 - d);
    recv.output = 0;
    prog.instrs = {send, recv};
    p.devices.push_back(prog);
  }
  return p;
}

/// Checks the order against every device's program.
void expectConsistent(const plan::Plan &p, const std::vector<Transfer> &order) {
  std::map<uint32_t, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i)
    EXPECT_TRUE(pos.emplace(order[i].channel, i).second) << "channel listed twice";
  size_t pairs = 0;
  for (uint32_t d = 0; d < p.devices.size(); ++d) {
    long lastRecv = -1;
    for (const plan::Instr &in : p.devices[d].instrs) {
      if (in.kind == plan::InstrKind::Kernel || in.kind == plan::InstrKind::Collective) continue;
      ASSERT_TRUE(pos.count(in.channel)) << "channel " << in.channel << " missing";
      long at = long(pos[in.channel]);
      const Transfer &t = order[size_t(at)];
      if (in.kind == plan::InstrKind::Recv) {
        ++pairs;
        EXPECT_EQ(t.receiver, d);
        EXPECT_EQ(t.sender, in.peer);
        EXPECT_EQ(t.bytes, p.devices[d].buffers[in.output].bytes);
      }
      // Receives in program order; a send after the receives before it.
      EXPECT_GT(at, lastRecv) << p.devices[d].device << " channel " << in.channel;
      if (in.kind == plan::InstrKind::Recv) lastRecv = at;
    }
  }
  EXPECT_EQ(pairs, order.size());
}

/// Runs `steps` steps of `p` under the proxy protocol, NCCL calls modelled
/// as rendezvous: an operation issues only when both ranks' proxies are at
/// it, the sender's worker has posted it and the receiver's worker has
/// reached its receive (asked for it). Workers never block on sends;
/// a receive waits for its NCCL operation or, on other channels, the send.
/// A rank's workers start a step when all of them finished the last one and
/// its proxy issued that step's sends (Executor::step, finishStep). A
/// collective (host path) is a meeting: no member passes it before all came.
/// True when everything finishes.
bool runsToEnd(const plan::Plan &p, const std::vector<int> &rankOf,
               const std::vector<std::vector<ProxyOp>> &opsOf, int steps) {
  using Key = std::pair<int, uint32_t>; // (step, channel)
  std::set<uint32_t> viaNccl;
  for (const auto &ops : opsOf)
    for (const ProxyOp &op : ops) viaNccl.insert(op.transfer.channel);
  const size_t ranks = opsOf.size();
  std::set<Key> posted, requested, issued;
  std::map<Key, std::set<uint32_t>> came; // collectives: members arrived
  std::vector<size_t> pc(p.devices.size(), 0), head(ranks, 0);
  std::vector<int> step(p.devices.size(), 0);
  auto opAt = [&](size_t r, size_t i) {
    const auto &ops = opsOf[r];
    return std::pair<int, const ProxyOp *>(int(i / ops.size()), &ops[i % ops.size()]);
  };
  auto proxyDone = [&](size_t r) {
    return opsOf[r].empty() || head[r] >= opsOf[r].size() * size_t(steps);
  };
  auto rankMayStart = [&](int r, int s) {
    if (s == 0) return true;
    for (uint32_t d = 0; d < p.devices.size(); ++d)
      if (rankOf[d] == r && (step[d] < s)) return false;
    // Every send of step s-1 of this rank's proxy issued.
    for (const ProxyOp &op : opsOf[size_t(r)])
      if (op.send && !issued.count({s - 1, op.transfer.channel})) return false;
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (uint32_t d = 0; d < p.devices.size(); ++d) {
      const auto &instrs = p.devices[d].instrs;
      while (step[d] < steps) {
        if (pc[d] == 0 && !rankMayStart(rankOf[d], step[d])) break;
        if (pc[d] == instrs.size()) {
          pc[d] = 0;
          ++step[d];
          progress = true;
          continue;
        }
        const plan::Instr &in = instrs[pc[d]];
        Key k{step[d], in.channel};
        if (in.kind == plan::InstrKind::Send) posted.insert(k);
        if (in.kind == plan::InstrKind::Collective) {
          if (came[k].insert(d).second) progress = true;
          if (came[k].size() < in.group.size()) break;
        }
        if (in.kind == plan::InstrKind::Recv) {
          bool nccl = viaNccl.count(in.channel) != 0;
          if (nccl && !requested.count(k)) {
            requested.insert(k);
            progress = true;
          }
          if (!(nccl ? issued.count(k) : posted.count(k))) break;
        }
        ++pc[d];
        progress = true;
      }
    }
    for (size_t r = 0; r < ranks; ++r) {
      if (proxyDone(r)) continue;
      auto [s, op] = opAt(r, head[r]);
      uint32_t c = op->transfer.channel;
      size_t peer = size_t(rankOf[op->send ? op->transfer.receiver : op->transfer.sender]);
      if (proxyDone(peer)) continue;
      auto [ps, pop] = opAt(peer, head[peer]);
      if (ps != s || pop->transfer.channel != c) continue; // the peer is elsewhere: wait
      if (!posted.count({s, c}) || !requested.count({s, c})) continue;
      issued.insert({s, c});
      ++head[r];
      ++head[peer];
      progress = true;
    }
  }
  for (uint32_t d = 0; d < p.devices.size(); ++d)
    if (step[d] < steps) return false;
  for (size_t r = 0; r < ranks; ++r)
    if (!proxyDone(r)) return false;
  return true;
}

std::vector<std::vector<ProxyOp>> opsOfRanks(const plan::Plan &p, const std::vector<int> &rankOf,
                                             int ranks) {
  std::vector<Transfer> order = transferOrder(p);
  std::vector<std::vector<ProxyOp>> ops;
  for (int r = 0; r < ranks; ++r) ops.push_back(proxyOps(p, order, rankOf, r));
  return ops;
}

TEST(TransferOrder, PipelinedPlansUnderEveryScheduleAreConsistentAndDeadlockFree) {
  for (const char *schedule : {"gpipe", "1f1b", "interleaved-1f1b"}) {
    SCOPED_TRACE(schedule);
    plan::Plan p = pipelined({"gpu:0", "gpu:1", "gpu:2"}, schedule);
    std::vector<Transfer> order = transferOrder(p);
    ASSERT_GT(order.size(), 8u);
    expectConsistent(p, order);
    // Every rank computes the same order.
    std::vector<Transfer> again = transferOrder(p);
    ASSERT_EQ(again.size(), order.size());
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(again[i].channel, order[i].channel);

    for (const std::vector<int> &rankOf :
         {std::vector<int>{0, 1, 2}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}}) {
      int ranks = *std::max_element(rankOf.begin(), rankOf.end()) + 1;
      auto ops = opsOfRanks(p, rankOf, ranks);
      EXPECT_TRUE(runsToEnd(p, rankOf, ops, 2))
          << "ranks " << rankOf[0] << rankOf[1] << rankOf[2];
    }
  }
}

// Data-parallel replicas of a pipeline: the gradient all-reduces are
// meetings of each stage's replicas, and the order must let every rank
// reach them (a replica per rank, replicas split across ranks).
TEST(TransferOrder, DataParallelPipelinesWithCollectivesRunToTheEnd) {
  for (int zero : {0, 1}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    passes::PassOptions options;
    options.devices = {"gpu:0", "gpu:1", "gpu:2", "gpu:3", "gpu:4", "gpu:5"};
    options.microbatches = 2;
    options.dataParallel = 2;
    options.zero = zero;
    plan::Plan p = compiler::compileModel(test::seedModelJson(), options, /*seed=*/1);
    ASSERT_EQ(p.devices.size(), 6u);
    std::vector<Transfer> order = transferOrder(p);
    expectConsistent(p, order);
    for (const std::vector<int> &rankOf :
         {std::vector<int>{0, 0, 0, 1, 1, 1}, {0, 1, 2, 0, 1, 2}, {0, 1, 0, 1, 0, 1}}) {
      int ranks = *std::max_element(rankOf.begin(), rankOf.end()) + 1;
      auto ops = opsOfRanks(p, rankOf, ranks);
      EXPECT_TRUE(runsToEnd(p, rankOf, ops, 2)) << "rank map " << rankOf[1] << rankOf[3];
    }
  }
}

TEST(TransferOrder, ExchangeBeforeReceiveIsOrderedByReceives) {
  plan::Plan p = exchangePlan();
  std::vector<Transfer> order = transferOrder(p);
  ASSERT_EQ(order.size(), 2u);
  expectConsistent(p, order);
  std::vector<int> rankOf = {0, 1};
  auto ops = opsOfRanks(p, rankOf, 2);
  EXPECT_TRUE(runsToEnd(p, rankOf, ops, 3));

  // The control: each rank issuing its own sends first (program order)
  // makes the two proxies wait for each other.
  std::vector<std::vector<ProxyOp>> programOrder = {
      {{order[0], order[0].sender == 0}, {order[1], order[1].sender == 0}},
      {{order[1], order[1].sender == 1}, {order[0], order[0].sender == 1}}};
  ASSERT_TRUE(programOrder[0][0].send && programOrder[1][0].send);
  EXPECT_FALSE(runsToEnd(p, rankOf, programOrder, 1));
}

TEST(TransferOrder, ProxiesCarryOnlyGpuChannelsBetweenRanks) {
  plan::Plan p = pipelined({"gpu:0", "cpu:0", "gpu:1"}, "1f1b");
  std::vector<Transfer> order = transferOrder(p);
  // gpu:0 and gpu:1 talk only through cpu:0: no NCCL operations at all.
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(proxyOps(p, order, {0, 1, 2}, r).empty());

  plan::Plan g = pipelined({"gpu:0", "gpu:1", "gpu:2"}, "1f1b");
  order = transferOrder(g);
  // gpu:0 and gpu:1 on rank 0: their channels stay in the process.
  std::vector<int> rankOf = {0, 0, 1};
  std::vector<ProxyOp> r0 = proxyOps(g, order, rankOf, 0), r1 = proxyOps(g, order, rankOf, 1);
  ASSERT_FALSE(r0.empty());
  ASSERT_EQ(r0.size(), r1.size());
  for (size_t i = 0; i < r0.size(); ++i) {
    // The same transfers in the same order on both sides, opposite roles.
    EXPECT_EQ(r0[i].transfer.channel, r1[i].transfer.channel);
    EXPECT_NE(r0[i].send, r1[i].send);
    EXPECT_EQ(r0[i].send ? r0[i].transfer.sender : r0[i].transfer.receiver, 1u);
  }
}

} // namespace
} // namespace mpc::runtime::cuda
