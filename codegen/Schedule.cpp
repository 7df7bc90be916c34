//===- codegen/Schedule.cpp - each device's instruction list -------------===//
//
// Every op node becomes one instruction on its device: a kernel call named by
// the op, with the node's attributes; a cross-device `copy` becomes a Send on
// the source device and a Recv on the destination, joined by a channel id
// (numbered 0, 1, ... in topological order of the copies, so unique per plan
// and deterministic).
//
// Execution order of the nodes: a topological order of the graph with one
// more kind of edge, in which of the nodes ready to run, work another device
// waits for goes first, then collectives, then the rest by creation index
// (orderNodes). An optimizer update overwrites
// its parameter and state in place, so every other reader of those values
// (the forward matmul, the backward matmul that propagates the gradient, the
// send of the parameter to another device) must run before the update:
// each such reader gets an edge to the update.
//
// Order. Each instruction gets a key in one global order derived from that
// execution order:
//   * a kernel sits at its node's position;
//   * a send sits right after the instruction producing its buffer (or at
//     the leaf's position for an input or param), so data leaves as soon as
//     it is ready;
//   * a receive sits just before the first instruction that uses it, so the
//     device computes other work while the data is in flight (when the value
//     is forwarded by another copy, or has no user, it stays at its position).
//   * a collective (all_reduce, ...) is one instruction per member device,
//     all at one key: the position of its first member node. Every member
//     uses every contribution, so each contribution is ready on its device
//     before that key. Its channel ids follow those numbered before it
//     (plan/Collective.h).
// Each device runs the instructions of the global order that are its own.
//
// Why this cannot deadlock. Sends never block (channels are unbounded) and a
// receive waits only for its send. Every dependency points forward in the
// global order: a kernel's operands are produced or received before it, a
// send follows its producer, and a receive follows its send (the copy comes
// after its source in topological order). Take, at any moment, the earliest
// unfinished instruction in the global order: everything before it on its
// device is done, and if it is a receive, its send (earlier) is done too; so
// it can run, and every step makes progress until all devices finish. If
// it is a collective, every member device has finished what precedes its key
// too, so every member comes to it, and it completes.
// plan::verifyPlan re-checks this by simulation on every plan it reads.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerSteps.h"

#include "plan/Collective.h"
#include "support/Error.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

namespace mpc::codegen {

namespace {

enum Phase : int { kBeforeUse = 0, kAtPosition = 1, kAfterProducer = 2 };

/// Where an instruction goes: its key in the global order, its device, and
/// its index in the list of instructions made. The keys are sorted, not the
/// instructions themselves (which are large), and each instruction is moved
/// once, to its device's list.
struct Item {
  std::tuple<size_t, int, size_t> key; ///< (position, phase, tie-break)
  uint32_t device;
  size_t instr;
};

plan::Action actionOf(const LoweringState &st, const ir::Node *n) {
  return st.actions[size_t(n->id)];
}

bool updatesInPlace(const ir::Node *n) { return n->isOp() && n->info().has(ir::kOptimizer); }

} // namespace

std::vector<std::vector<size_t>> executionSuccessors(const ir::Graph &graph) {
  const auto &nodes = graph.nodes();
  // Creation index by node id (arrays, not trees: this runs once per node).
  std::vector<size_t> byId(graph.idBound());
  for (size_t i = 0; i < nodes.size(); ++i) byId[size_t(nodes[i]->id)] = i;
  auto index = [&](const ir::Node *n) { return byId[size_t(n->id)]; };
  std::vector<std::vector<size_t>> succ(nodes.size());
  std::vector<std::vector<const ir::Node *>> users(nodes.size());
  // A node using a value twice is its successor once: it is that value's
  // last user so far (no copy and sort of each operand list).
  std::vector<size_t> lastUser(nodes.size(), SIZE_MAX);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const ir::Node *in : nodes[i]->inputs) {
      size_t k = index(in);
      if (lastUser[k] == i) continue;
      lastUser[k] = i;
      succ[k].push_back(i);
      users[k].push_back(nodes[i].get());
    }
  // Two updates of one tensor (batch_norm_update's micro-batch replicas)
  // run in creation order, which is micro-batch order.
  std::vector<size_t> lastUpdate(nodes.size(), SIZE_MAX);
  for (size_t u = 0; u < nodes.size(); ++u) {
    const ir::Node *update = nodes[u].get();
    if (!updatesInPlace(update)) continue;
    for (int k : update->info().mutatedOperands) {
      if (k >= int(update->inputs.size())) continue;
      size_t target = index(update->inputs[size_t(k)]);
      for (const ir::Node *reader : users[target])
        if (reader != update && !updatesInPlace(reader)) succ[index(reader)].push_back(u);
      if (lastUpdate[target] != SIZE_MAX && lastUpdate[target] != u)
        succ[lastUpdate[target]].push_back(u);
      lastUpdate[target] = u;
    }
  }
  return succ;
}

void orderNodes(LoweringState &st) {
  const auto &nodes = st.graph.nodes();
  std::vector<std::vector<size_t>> succ = executionSuccessors(st.graph);
  std::vector<int> pending(nodes.size(), 0);
  for (const auto &s : succ)
    for (size_t v : s) ++pending[v];
  // Communication first, in two ranks; otherwise creation order.
  //  2. What another device waits for: a transfer to another device and the
  //     work on this device that leads to one (backward's input gradient
  //     for the previous stage).
  //  1. A collective, and what only feeds collectives (a gradient bucket's
  //     packing), as soon as it is ready, so that it proceeds while the rest
  //     of backward goes on. A member runs its collective on its device's
  //     worker, so rank 2 goes first: the other devices keep working while
  //     this one waits in the collective.
  // Both are found in reverse creation order, which puts a node's users
  // first except where a pass created a user before it (a copy); they only
  // rank ready nodes, so a miss costs overlap, never order.
  std::vector<char> rank(nodes.size(), 0);
  for (size_t i = nodes.size(); i-- > 0;) {
    const ir::Node *n = nodes[i].get();
    if (!n->isOp()) continue;
    bool feedsTransfer = n->isTransfer(), onlyCollectives = !succ[i].empty();
    for (size_t v : succ[i]) {
      feedsTransfer = feedsTransfer || nodes[v]->isTransfer() ||
                      (rank[v] == 2 && nodes[v]->device == n->device);
      onlyCollectives = onlyCollectives && rank[v] == 1;
    }
    rank[i] = feedsTransfer ? 2 : n->info().has(ir::kCollective) || onlyCollectives ? 1 : 0;
  }
  auto later = [&](size_t a, size_t b) { return rank[a] != rank[b] ? rank[b] > rank[a] : a > b; };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  st.topo.clear();
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    st.topo.push_back(nodes[i].get());
    for (size_t v : succ[i])
      if (--pending[v] == 0) ready.push(v);
  }
  if (st.topo.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0 && updatesInPlace(nodes[i].get()))
        throw InternalError("cannot update " + nodes[i]->describe() +
                            " in place: a reader of the old value depends on the new one");
    throw InternalError("cycle in the graph while ordering it for lowering");
  }
}

void scheduleInstructions(LoweringState &st) {
  // Position in the execution order and users, by node id.
  std::vector<size_t> posById(st.graph.idBound());
  for (size_t i = 0; i < st.topo.size(); ++i) posById[size_t(st.topo[i]->id)] = i;
  // A collective's members (same op, same contributions) share the position
  // of the first, and its channel ids.
  using CollectiveKey = std::pair<ir::OpKind, std::vector<const ir::Node *>>;
  std::map<CollectiveKey, std::vector<const ir::Node *>> collectives;
  for (const ir::Node *n : st.topo)
    if (n->isOp() && n->info().has(ir::kCollective))
      collectives[{n->op, {n->inputs.begin(), n->inputs.end()}}].push_back(n);
  for (const auto &[key, members] : collectives)
    for (const ir::Node *m : members) posById[size_t(m->id)] = posById[size_t(members[0]->id)];
  std::map<CollectiveKey, uint32_t> collectiveChannel;
  auto pos = [&](const ir::Node *n) { return posById[size_t(n->id)]; };

  std::vector<std::vector<const ir::Node *>> usersById(st.graph.idBound());
  for (const ir::Node *n : st.topo)
    for (const ir::Node *in : n->inputs) {
      auto &users = usersById[size_t(in->id)];
      if (users.empty() || users.back() != n) users.push_back(n);
    }

  std::vector<Item> items;
  std::vector<plan::Instr> instrs;
  auto emit = [&](uint32_t device, std::tuple<size_t, int, size_t> key, plan::Instr in) {
    items.push_back({key, device, instrs.size()});
    instrs.push_back(std::move(in));
  };
  uint32_t nextChannel = 0;
  for (size_t p = 0; p < st.topo.size(); ++p) {
    const ir::Node *n = st.topo[p];
    if (!n->isOp()) continue;
    const ValueSlot &out = st.slotOf(n);
    if (n->info().has(ir::kCollective)) {
      plan::Instr in;
      in.kind = plan::InstrKind::Collective;
      in.op = n->info().name;
      for (const ir::Node *c : n->inputs) {
        const ValueSlot &s = st.slotOf(c);
        in.group.push_back(s.device);
        if (s.device == out.device) in.inputs = {s.buffer};
      }
      CollectiveKey key{n->op, {n->inputs.begin(), n->inputs.end()}};
      auto [it, first] = collectiveChannel.emplace(key, nextChannel);
      if (first) nextChannel += uint32_t(plan::collectiveChannels(in.group.size()));
      in.channel = it->second;
      in.output = out.buffer;
      in.node = n->name;
      in.action = actionOf(st, n);
      emit(out.device, {pos(n), kAtPosition, pos(n)}, std::move(in));
      continue;
    }
    bool transfer = n->isOp(ir::OpKind::Copy) && n->inputs.size() == 1 &&
                    st.deviceOf(n->inputs[0]) != out.device;
    if (!transfer) {
      plan::Instr in;
      in.kind = plan::InstrKind::Kernel;
      in.op = n->info().name;
      in.attrs = n->attrs; // one attribute type (ops/Attribute.h)
      // A dropout mask's stream is its node's name unless it names another.
      if (n->info().drawsMask(n->attrs)) in.attrs["key"] = ir::dropoutKeyName(*n);
      for (const ir::Node *operand : n->inputs) {
        const ValueSlot &s = st.slotOf(operand);
        MPC_ASSERT(s.device == out.device, "operand of '" + n->name + "' on another device");
        in.inputs.push_back(s.buffer);
      }
      in.output = out.buffer;
      in.node = n->name;
      in.action = actionOf(st, n);
      emit(out.device, {p, kAtPosition, p}, std::move(in));
      continue;
    }

    const ir::Node *src = n->inputs[0];
    const ValueSlot &from = st.slotOf(src);
    uint32_t channel = nextChannel++;

    plan::Instr send;
    send.kind = plan::InstrKind::Send;
    send.inputs = {from.buffer};
    send.peer = out.device;
    send.channel = channel;
    send.node = n->name;
    send.action = actionOf(st, src);
    emit(from.device, {pos(src), kAfterProducer, p}, std::move(send));

    plan::Instr recv;
    recv.kind = plan::InstrKind::Recv;
    recv.output = out.buffer;
    recv.peer = from.device;
    recv.channel = channel;
    recv.node = n->name;
    recv.action = actionOf(st, n);
    const std::vector<const ir::Node *> &users = usersById[size_t(n->id)];
    bool forwarded = std::any_of(users.begin(), users.end(),
                                 [](const ir::Node *u) { return u->isOp(ir::OpKind::Copy); });
    std::tuple<size_t, int, size_t> key{p, kAtPosition, p};
    if (!users.empty() && !forwarded) {
      size_t first = pos(users.front());
      for (const ir::Node *u : users) first = std::min(first, pos(u));
      key = {first, kBeforeUse, p};
    }
    emit(out.device, key, std::move(recv));
  }

  std::stable_sort(items.begin(), items.end(),
                   [](const Item &a, const Item &b) { return a.key < b.key; });
  std::vector<size_t> perDevice(st.plan.devices.size(), 0);
  for (const Item &item : items) ++perDevice[item.device];
  for (size_t d = 0; d < perDevice.size(); ++d) st.plan.devices[d].instrs.reserve(perDevice[d]);
  for (const Item &item : items)
    st.plan.devices[item.device].instrs.push_back(std::move(instrs[item.instr]));
}

} // namespace mpc::codegen
