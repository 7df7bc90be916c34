//===- passes/Place.cpp - give every node a concrete device -------------===//
//
// Invariant established: every node of the graph sits on a concrete device
// ("cpu:N" / "gpu:N"), taken from --devices when that flag is given; the
// graph is marked kPlaced. A parameter, its gradient, its optimizer state and
// its update op share a device, and every backward node sits on its forward
// node's device.
//
// Algorithm (MXNet's PlaceDevice, with group names as its ctx_group):
//   1. Resolve annotations. --map entries first (an entry naming a group the
//      model does not use is an error); unmapped groups then take, in order
//      of first appearance (node creation order), the devices of --devices
//      not targeted by --map (default list: cpu:0, cpu:1, ...). A concrete
//      device written in the model must be one of --devices when given.
//   2. With --placement=auto, partition the unannotated forward ops into
//      contiguous stages (passes/AutoPlace.cpp); annotations are constraints.
//   3. Forward propagation, in topological order: an unplaced forward node
//      takes the device of its first placed operand (operand order).
//   4. Backward propagation, in reverse topological order: a node still
//      unplaced (a leaf, or an op fed only by unplaced leaves) takes the
//      device of its first placed consumer in topological order.
//   5. Anything left (an isolated leaf) goes to the default device, the first
//      of --devices (cpu:0 without --devices).
//   6. Colocation, for nodes excluded from steps 3-5: state tensors and
//      update ops go to their parameter's device, backward nodes to their
//      forward node's (Node::origin) device.
// Every step iterates in a stable order, so the result is deterministic.
// Running the pass on a placed graph changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/AutoPlace.h"
#include "passes/Pass.h"

#include "ir/Collectives.h"
#include "ir/Device.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <map>
#include <set>

namespace mpc::passes {

using ir::Graph;
using ir::Node;

namespace {

bool isConcrete(const std::string &d) { return ir::parseDevice(d).has_value(); }

/// The concrete devices a group's target names: itself, or a device set's.
std::vector<std::string> targetDevices(const std::string &d) {
  std::vector<std::string> members = ir::deviceSetMembers(d);
  return members.empty() ? std::vector<std::string>{d} : members;
}

/// Where a diagnostic about `n`'s device points: "/nodes/3/device" or the
/// node's name when it did not come from the model file.
std::string deviceWhere(const Node &n) {
  return n.jsonPath.empty() ? "'" + n.name + "'" : n.jsonPath + "/device";
}

/// Nodes whose device follows from another node (steps 6).
bool isColocated(const Node &n) {
  return n.backward || n.kind == ir::NodeKind::State ||
         (n.isOp() && n.info().has(ir::kOptimizer));
}

/// Step 1: the concrete device of every annotated node.
std::map<const Node *, std::string> resolveAnnotations(const Graph &g,
                                                       const PassOptions &opts) {
  const std::string &file = g.sourceFile;
  const std::vector<std::string> &devices = opts.devices;
  bool restricted = !devices.empty();
  auto inDevices = [&](const std::string &d) {
    return std::find(devices.begin(), devices.end(), d) != devices.end();
  };
  for (const std::string &d : devices)
    if (!isConcrete(d))
      throw UserError(file, "--devices", "invalid device '" + d + "' (expected cpu:N or gpu:N)");

  // Groups in order of first appearance, with the node that introduces each.
  std::vector<std::pair<std::string, const Node *>> groups;
  std::set<std::string> seen;
  for (const auto &n : g.nodes())
    if (!n->device.empty() && !ir::isPlacedDevice(n->device) && seen.insert(n->device).second)
      groups.push_back({n->device, n.get()});

  // "a,b" or "none": the groups the model's nodes name, for messages.
  const std::string groupNames = [&] {
    std::vector<std::string> names;
    for (const auto &gr : groups) names.push_back(gr.first);
    return names.empty() ? std::string("none") : joinText(names, ",");
  }();
  std::set<std::string> mapTargets;
  for (const auto &[group, dev] : opts.groupMap) {
    if (!seen.count(group))
      throw UserError(file, "--map",
                      "unknown group '" + group + "' (the model's groups: " +
                          groupNames +
                          ")");
    if (!isConcrete(dev) && !ir::parseDeviceSet(dev))
      throw UserError(file, "--map",
                      "invalid device '" + dev + "' for group '" + group +
                          "' (expected cpu:N or gpu:N, or several distinct devices of one "
                          "kind joined by '+': cpu:0+cpu:1)");
    for (const std::string &m : targetDevices(dev)) {
      if (restricted && !inDevices(m))
        throw UserError(file, "--map",
                        "device '" + m + "' of group '" + group + "' is beyond --devices (" +
                            joinText(devices, ",") + ")");
      mapTargets.insert(m);
    }
  }

  // The model's "groups", where --map does not say otherwise.
  std::map<std::string, std::string> groupDevice(opts.groupMap.begin(), opts.groupMap.end());
  for (const auto &[group, list] : g.groups) {
    if (!seen.count(group))
      throw UserError(file, "/groups/" + group,
                      "no node is in group '" + group + "' (the model's groups: " +
                          groupNames +
                          ")");
    if (groupDevice.count(group)) continue;
    for (const std::string &m : list) {
      if (restricted && !inDevices(m))
        throw UserError(file, "/groups/" + group,
                        "device '" + m + "' of group '" + group + "' is beyond --devices (" +
                            joinText(devices, ",") + ")");
      mapTargets.insert(m);
    }
    groupDevice[group] = joinText(list, "+");
  }

  // Unmapped groups take the free devices in order.
  size_t nextFree = 0;
  int nextCpu = 0;
  for (const auto &[group, first] : groups) {
    if (groupDevice.count(group)) continue;
    std::string dev;
    if (restricted) {
      while (nextFree < devices.size() && mapTargets.count(devices[nextFree])) ++nextFree;
      if (nextFree == devices.size())
        throw UserError(file, deviceWhere(*first),
                        "group '" + group + "' of " + first->describe() +
                            " has no device left: --devices (" + joinText(devices, ",") +
                            ") has fewer free devices than the model has groups");
      dev = devices[nextFree++];
    } else {
      do dev = "cpu:" + std::to_string(nextCpu++);
      while (mapTargets.count(dev));
    }
    groupDevice[group] = dev;
  }

  std::map<const Node *, std::string> pinned;
  for (const auto &n : g.nodes()) {
    if (n->device.empty()) continue;
    if (ir::isPlacedDevice(n->device)) {
      if (restricted && !isConcrete(n->device)) {
        pinned[n.get()] = n->device;
        continue;
      }
      if (restricted && !inDevices(n->device))
        throw UserError(file, deviceWhere(*n),
                        "device '" + n->device + "' of " + n->describe() +
                            " is beyond --devices (" + joinText(devices, ",") + ")");
      pinned[n.get()] = n->device;
    } else {
      pinned[n.get()] = groupDevice.at(n->device);
    }
  }
  return pinned;
}

/// A param or input declaring "shard": D is split over the devices of its
/// tensor-parallel group: it must sit on one, and D must divide evenly.
void checkDeclaredSplits(const Graph &g) {
  for (const auto &n : g.nodes()) {
    if (!n->shard) continue;
    std::vector<std::string> members = targetDevices(n->device);
    std::string where = n->jsonPath.empty() ? n->where() : n->jsonPath + "/shard";
    if (members.size() < 2)
      throw UserError(g.sourceFile, where,
                      n->describe() + " declares \"shard\": " + std::to_string(*n->shard) +
                          ", but it is placed on " + n->device +
                          ", a single device: a split needs a group mapped to several devices "
                          "(--map GROUP=cpu:0+cpu:1, or \"groups\" in the model)");
    int64_t size = n->type.shape[size_t(*n->shard)];
    if (size % int64_t(members.size()) != 0)
      throw UserError(g.sourceFile, where,
                      n->describe() + " " + n->type.str() + " cannot be split along dimension " +
                          std::to_string(*n->shard) + " (size " + std::to_string(size) +
                          ") into " + std::to_string(members.size()) + " equal parts over " +
                          n->device + ": the group size must divide it");
  }
}

class PlacePass : public Pass {
public:

  bool run(Graph &g, PassContext &ctx) override {
    const PassOptions &opts = ctx.options;
    std::map<const Node *, std::string> pinned = resolveAnnotations(g, opts);

    std::vector<Node *> order = g.topoOrder();
    if (opts.placement == "auto") autoPlace(g, order, ctx, pinned);
    else if (opts.placement != "explicit")
      throw UserError(g.sourceFile, "--placement",
                      "unknown placement '" + opts.placement + "' (expected explicit or auto)");

    // Each node's device as it becomes known, by node id: a pointer to a
    // string of `pinned` or to `fallback`, which outlive it (an array, not a
    // map of strings: it is read for every operand and user of every node).
    std::string fallback = opts.devices.empty() ? "cpu:0" : opts.devices.front();
    std::vector<const std::string *> dev(g.idBound(), nullptr);
    for (const auto &[n, d] : pinned) dev[size_t(n->id)] = &d;
    auto devOf = [&](const Node *n) -> const std::string *& { return dev[size_t(n->id)]; };

    // Step 3: forward propagation.
    for (Node *n : order) {
      if (devOf(n) || isColocated(*n)) continue;
      for (const Node *in : n->inputs)
        if (devOf(in)) {
          devOf(n) = devOf(in);
          break;
        }
    }
    // Step 4: backward propagation from consumers, first in topological order.
    std::vector<std::vector<Node *>> consumers(g.idBound());
    for (Node *n : order)
      for (const Node *in : n->inputs) {
        auto &list = consumers[size_t(in->id)];
        if (list.empty() || list.back() != n) list.push_back(n);
      }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node *n = *it;
      if (devOf(n) || isColocated(*n)) continue;
      for (const Node *u : consumers[size_t(n->id)])
        if (devOf(u)) {
          devOf(n) = devOf(u);
          break;
        }
    }
    // Step 5: the default device.
    for (Node *n : order)
      if (!devOf(n) && !isColocated(*n)) devOf(n) = &fallback;

    // Step 6: colocation, in topological order so that chains of backward
    // nodes resolve front to back.
    for (Node *n : order) {
      if (devOf(n)) continue;
      const Node *anchor = nullptr;
      if (n->kind == ir::NodeKind::State || n->backward) anchor = g.find(n->origin);
      else if (n->isOp() && !n->inputs.empty()) anchor = n->inputs.front(); // the param
      if (anchor && devOf(anchor)) {
        devOf(n) = devOf(anchor);
        continue;
      }
      for (const Node *in : n->inputs)
        if (devOf(in)) {
          devOf(n) = devOf(in);
          break;
        }
      if (!devOf(n)) devOf(n) = &fallback;
    }

    bool changed = false;
    for (Node *n : order) {
      const std::string &d = *devOf(n);
      if (n->device != d) {
        n->device = d;
        changed = true;
      }
    }
    checkDeclaredSplits(g);
    // Collectives can run only if every device of each group takes part.
    std::vector<ir::CollectiveProblem> problems = ir::checkCollectives(g);
    if (!problems.empty())
      throw UserError(g.sourceFile, problems[0].node->where(),
                      problems[0].node->describe() + " on '" + problems[0].node->device +
                          "': " + problems[0].message);
    if (!g.has(ir::kPlaced)) {
      g.stages |= ir::kPlaced;
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createPlacePass() { return std::make_unique<PlacePass>(); }

} // namespace mpc::passes
