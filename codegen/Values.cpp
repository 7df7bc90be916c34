//===- codegen/Values.cpp - devices, buffers and the plan's interface ----===//
//
// The value side of lowering: which devices the plan has (the distinct node
// devices, sorted: cpu:0 < cpu:1 < ... < gpu:0), one buffer per value on its
// node's device, the user-visible tensors (inputs, params, states, outputs,
// loss) with their buffers, the optimizer, and the initial values of params
// and states drawn with ir::initialValues.
//
// Buffers: params, state, inputs, model outputs and the loss live in the
// persistent region, everything else in the arena. An in-place update
// (sgd_update, adam_update, batch_norm_update) writes its operand 0 (the
// parameter, the running mean), so its value *is* that operand's buffer; no
// new buffer is made for it.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"
#include "codegen/LowerSteps.h"

#include "ir/Device.h"
#include "ir/Init.h"
#include "plan/OpSignatures.h"
#include "plan/PlanFormat.h"
#include "support/Error.h"
#include "support/HostMemory.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace mpc::codegen {

namespace {

bool isOptimizerUpdate(const ir::Node *n) { return n->isOp() && n->info().has(ir::kOptimizer); }

} // namespace

void checkAndCollectDevices(LoweringState &st) {
  const ir::Graph &g = st.graph;
  const std::string &file = g.sourceFile;
  if (!g.has(ir::kPlaced))
    throw UserError(file, "", "graph '" + g.name +
                                  "' is not placed: run the 'place' pass before lowering");
  if (!g.has(ir::kCopiesExplicit))
    throw UserError(file, "", "graph '" + g.name + "' has implicit cross-device uses: run the "
                                  "'insert-copies' pass before lowering");
  try {
    st.topo = g.topoOrder();
  } catch (const RuleError &e) {
    throw UserError(file, "", e.what());
  }
  if (st.topo.empty())
    throw UserError(file, "/nodes", "model '" + g.name + "' is empty: nothing to compile");
  std::set<ir::Device> devices;
  for (const ir::Node *n : st.topo) {
    auto d = ir::parseDevice(n->device);
    if (!d)
      throw UserError(file, n->where(),
                      n->describe() + " has no concrete device (device '" + n->device +
                          "'): run the 'place' pass before lowering");
    devices.insert(*d);
  }
  for (const ir::Node *n : st.topo) {
    if (!n->isOp() || n->isOp(ir::OpKind::Copy) || n->info().has(ir::kCollective)) continue;
    for (const ir::Node *in : n->inputs)
      if (in->device != n->device)
        throw UserError(file, n->where(),
                        n->describe() + " on " + n->device + " uses " + in->describe() + " from " +
                            in->device + " without a copy: run 'insert-copies' before lowering");
  }
  for (const ir::Device &d : devices) {
    uint32_t index = uint32_t(st.devices.size());
    st.devices[d.str()] = index;
    plan::DeviceProgram program;
    program.device = d.str();
    st.plan.devices.push_back(std::move(program));
  }
  // parseDevice normalises ("cpu:01" would print as "cpu:1"); nodes keep the
  // user's spelling, so map that spelling too.
  st.deviceById.assign(g.idBound(), 0);
  for (const ir::Node *n : st.topo) {
    auto it = st.devices.find(n->device);
    if (it == st.devices.end())
      it = st.devices.emplace(n->device, st.devices.at(ir::parseDevice(n->device)->str())).first;
    st.deviceById[size_t(n->id)] = it->second;
  }
}

void createBuffers(LoweringState &st) {
  const ir::Graph &g = st.graph;
  std::set<std::string> persistentNames(g.outputs.begin(), g.outputs.end());
  if (!g.loss.empty()) persistentNames.insert(g.loss);
  // How many distinct nodes use each node, by id (a node using a value
  // twice counts once: it is that value's last user so far).
  std::vector<int> users(g.idBound(), 0), lastUser(g.idBound(), -1);
  for (const auto &n : g.nodes())
    for (const ir::Node *in : n->inputs)
      if (lastUser[size_t(in->id)] != n->id) {
        lastUser[size_t(in->id)] = n->id;
        ++users[size_t(in->id)];
      }
  // A matmul's accumulator (op(a) op(b) + c) that nothing else reads is
  // updated in place: the result takes c's arena buffer.
  auto accumulatesInPlace = [&](const ir::Node *n) {
    if (!n->isOp(ir::OpKind::MatMul) || n->inputs.size() != 3) return false;
    const ir::Node *c = n->inputs[2];
    return c->isOp() && users[size_t(c->id)] == 1 && c != n->inputs[0] && c != n->inputs[1] &&
           c->device == n->device && !persistentNames.count(c->name) &&
           !persistentNames.count(n->name);
  };
  for (const ir::Node *n : st.topo) {
    uint32_t dev = st.deviceOf(n);
    if (isOptimizerUpdate(n)) {
      MPC_ASSERT(!n->inputs.empty(), "optimizer update " + n->name + " without operands");
      st.slots[size_t(n->id)] = st.slotOf(n->inputs[0]);
      continue;
    }
    if (accumulatesInPlace(n)) {
      st.slots[size_t(n->id)] = st.slotOf(n->inputs[2]);
      continue;
    }
    plan::DeviceProgram &program = st.plan.devices[dev];
    plan::Buffer b;
    b.id = uint32_t(program.buffers.size());
    b.name = n->name;
    b.dtype = n->type.dtype;
    b.shape = n->type.shape;
    b.bytes = uint64_t(n->type.byteSize());
    bool persistent = n->isLeaf() || persistentNames.count(n->name);
    b.region = persistent ? plan::Region::Persistent : plan::Region::Arena;
    st.slots[size_t(n->id)] = ValueSlot{dev, b.id};
    program.buffers.push_back(std::move(b));
  }
}

void describeInterface(LoweringState &st) {
  const ir::Graph &g = st.graph;
  auto ref = [&](const ir::Node *n) {
    plan::TensorRef r;
    r.name = n->name;
    r.dtype = n->type.dtype;
    r.shape = n->type.shape;
    const ValueSlot &s = st.slotOf(n);
    r.device = s.device;
    r.buffer = s.buffer;
    return r;
  };
  // A data-parallel replica's param or state is a placement of the tensor
  // it mirrors (plan::TensorRef::mirrors), in replica order (creation order).
  // A ZeRO-1 shard, or a tensor-parallel part along an axis, is a part of
  // its tensor (plan::TensorRef::shards, ::shardAxis), which
  // takes the name and shape of the whole.
  std::map<std::string, std::vector<plan::Placement>> mirrors, shards;
  for (const auto &n : g.nodes()) {
    if (n->mirrorOf.empty() && !n->shardOf) continue;
    const ValueSlot &s = st.slotOf(n.get());
    if (!n->mirrorOf.empty()) mirrors[n->mirrorOf].push_back({s.device, s.buffer});
    if (n->shardOf && n->mirrorOf.empty()) {
      auto &parts = shards[n->shardOf->of];
      parts.resize(size_t(n->shardOf->count));
      parts[size_t(n->shardOf->index)] = {s.device, s.buffer};
    }
  }
  auto tensor = [&](const ir::Node *n) {
    plan::TensorRef r = ref(n);
    // A split tensor's mirrors are its replicas' parts, replica by replica.
    const std::string &tensorName = n->shardOf ? n->shardOf->of : n->name;
    if (auto it = mirrors.find(tensorName); it != mirrors.end()) r.mirrors = it->second;
    if (n->shardOf) {
      r.name = n->shardOf->of;
      r.shape = n->shardOf->shape;
      r.shards = shards.at(n->shardOf->of);
      r.shardAxis = int32_t(n->shardOf->axis);
    }
    return r;
  };
  for (const auto &n : g.nodes()) {
    if (!n->namesTensor()) continue;
    if (n->kind == ir::NodeKind::Input) st.plan.inputs.push_back(ref(n.get()));
    if (n->kind == ir::NodeKind::Param) st.plan.params.push_back(tensor(n.get()));
    if (n->kind == ir::NodeKind::State) st.plan.states.push_back(tensor(n.get()));
  }
  for (const std::string &name : g.outputs) {
    const ir::Node *n = g.find(name);
    MPC_ASSERT(n, "output '" + name + "' is not a value of the graph");
    st.plan.outputs.push_back(ref(n));
  }
  if (!g.loss.empty()) {
    const ir::Node *n = g.find(g.loss);
    MPC_ASSERT(n, "loss '" + g.loss + "' is not a value of the graph");
    st.plan.hasLoss = true;
    st.plan.loss = ref(n);
  }
}

void fillOpTable(plan::Plan &plan) {
  plan.ops.clear();
  std::set<std::string> names;
  for (const plan::DeviceProgram &d : plan.devices)
    for (const plan::Instr &in : d.instrs)
      if (in.kind == plan::InstrKind::Kernel) names.insert(in.op);
  for (const std::string &name : names) { // sorted, as the plan requires
    const ir::OpInfo *info = ir::lookupOp(name);
    MPC_ASSERT(info, "kernel names unknown op '" + name + "'");
    plan.ops.push_back(plan::signatureOf(*info));
  }
}

void describeOptimizer(LoweringState &st) {
  const ir::Graph &g = st.graph;
  if (!g.optimizer || !g.has(ir::kOptimized)) return;
  const ir::OptimizerSpec &o = *g.optimizer;
  plan::Optimizer &out = st.plan.optimizer;
  out.kind = o.kind;
  out.hyper["lr"] = o.lr;
  out.hyper["weight_decay"] = o.weightDecay;
  if (o.kind == "sgd") {
    out.hyper["momentum"] = o.momentum;
    out.hyper["dampening"] = o.dampening;
    out.hyper["nesterov"] = o.nesterov ? 1.0 : 0.0;
  } else {
    out.hyper["beta1"] = o.beta1;
    out.hyper["beta2"] = o.beta2;
    out.hyper["eps"] = o.eps;
  }
}

namespace {

/// The initial values live in memory twice (in the plan, then as the bytes
/// of plan.bin), so their sizes are checked against what this host allows
/// before any is drawn: a size from a file (a typo, num_hidden 2^32) must
/// be an error naming the parameter, not an out-of-memory kill.
void checkInitialValuesFit(const ir::Graph &g) {
  uint64_t total = 0, largest = 0;
  const ir::Node *big = nullptr;
  for (const auto &n : g.nodes()) {
    if (n->kind != ir::NodeKind::Param && n->kind != ir::NodeKind::State) continue;
    if (!n->namesTensor()) continue; // its tensor's values
    uint64_t bytes =
        uint64_t(n->shardOf ? *ir::checkedNumElements(n->shardOf->shape) : n->type.numElements()) * 4;
    total += bytes;
    if (bytes > largest) largest = bytes, big = n.get();
  }
  uint64_t limit = hostMemoryLimit();
  if (!big || 2 * total <= limit) return;
  std::string what = (big->kind == ir::NodeKind::Param ? std::string("param") : std::string("state")) + " '" + big->name + "' " + big->type.str() + " holds " +
                     byteSizeText(largest);
  throw UserError(g.sourceFile, big->where(),
                  largest == total
                      ? what + " of initial values, needed twice to write the plan: more than "
                               "this host's memory allows (" + byteSizeText(limit) + ")"
                      : what + "; the initial values of all " + byteSizeText(total) +
                            ", needed twice to write the plan, exceed what this host's memory "
                            "allows (" + byteSizeText(limit) + ")");
}

} // namespace

void computeInitialValues(LoweringState &st, uint64_t seed) {
  checkInitialValuesFit(st.graph);
  auto add = [&](const ir::Node *n) {
    // A shard's values are its whole tensor's (ZeRO-1 state starts at zero).
    const ir::Shape &shape = n->shardOf ? n->shardOf->shape : n->type.shape;
    const std::string &name = n->shardOf ? n->shardOf->of : n->name;
    std::vector<float> values =
        ir::initialValues(n->init.value_or(ir::InitSpec{}), shape, name, seed);
    MPC_ASSERT(int64_t(values.size()) == ir::checkedNumElements(shape).value_or(-1),
               "initial values of '" + name + "' have the wrong size");
    std::vector<uint8_t> bytes(values.size() * 4);
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t bits = n->type.dtype == ir::DType::F32
                          ? std::bit_cast<uint32_t>(values[i])
                          : uint32_t(int32_t(std::lround(values[i])));
      plan::storeLE(&bytes[i * 4], bits, 4);
    }
    st.plan.initialValues.push_back(std::move(bytes));
  };
  // Mirrors and shards take their tensor's values (plan::TensorRef::mirrors,
  // ::shards), in describeInterface's order.
  for (const auto &n : st.graph.nodes())
    if (n->kind == ir::NodeKind::Param && n->namesTensor()) add(n.get());
  for (const auto &n : st.graph.nodes())
    if (n->kind == ir::NodeKind::State && n->namesTensor()) add(n.get());
}

} // namespace mpc::codegen
