//===- ir/Verifier.cpp - structural and stage checks of a graph ---------===//
//
// Reports every violation, not just the first, each naming the node as
// "'h1' (matmul) @cpu:1: ..." (the device part only when the node has one).
// The checks run in layers, and a layer that depends on an earlier one only
// looks at nodes that passed it: types are re-inferred only for nodes whose
// operands, arity and attributes are sound, and the stage checks only run on
// an acyclic graph. Type checks run when the graph claims kShaped; device
// checks of the other stages when it claims them (see ir/Verifier.h).
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include "ir/Builder.h"
#include "ir/Collectives.h"
#include "ir/Layouts.h"
#include "ops/Collective.h"
#include "ir/Device.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

namespace mpc::ir {

namespace {

class Verifier {
public:
  explicit Verifier(const Graph &g) : g_(g) {}

  std::vector<std::string> run() {
    checkNames();
    std::vector<const Node *> sound;
    shapeOk_.assign(g_.idBound(), 0);
    for (const auto &n : g_.nodes())
      if (checkNode(*n)) sound.push_back(n.get());
    bool acyclic = checkAcyclic();
    if (g_.has(kShaped))
      for (const Node *n : sound) checkType(*n);
    checkLossAndOutputs();
    checkMirrors();
    checkShards();
    if (acyclic) {
      if (g_.has(kPlaced)) checkPlaced();
      if (g_.has(kCopiesExplicit)) checkCopies();
      if (g_.has(kDifferentiated)) checkGradients();
      if (g_.has(kOptimized)) checkOptimizer();
      // The rules read the types: only once they are sound.
      if (g_.has(kShaped) && errors_.empty())
        for (const LayoutProblem &p : checkLayouts(g_)) report(*p.node, p.message);
    }
    return std::move(errors_);
  }

private:
  static std::string who(const Node &n) {
    return n.describe() + (n.device.empty() ? "" : " @" + n.device);
  }

  void report(const Node &n, const std::string &msg) { errors_.push_back(who(n) + ": " + msg); }
  void report(const std::string &msg) { errors_.push_back(msg); }

  bool isMember(const Node *n) const { return g_.contains(n); }

  void checkNames() {
    // When every node is registered under its own name, no two nodes share
    // one (the registry maps a name to one node), and a set of the names
    // seen is not needed.
    if (g_.namesRegistered()) {
      for (const auto &n : g_.nodes())
        if (n->name.empty()) report(*n, "empty name");
      return;
    }
    std::unordered_set<std::string_view> seen;
    for (const auto &n : g_.nodes()) {
      if (n->name.empty()) report(*n, "empty name");
      if (!seen.insert(n->name).second) report(*n, "duplicate name '" + n->name + "'");
      if (g_.find(n->name) != n.get()) report(*n, "name not registered in the graph");
    }
  }

  /// Structure, arity, attributes and shape validity of one node. Returns
  /// whether the node is sound enough for its shape rule to be re-run.
  bool checkNode(const Node &n) {
    bool ok = true;
    if (checkedNumElements(n.type.shape)) {
      shapeOk_[size_t(n.id)] = 1;
    } else if (n.type.shape.size() > kMaxRank) {
      report(n, "shape " + shapeText(n.type.shape) + ": " + rankLimitText(n.type.shape.size()));
      ok = false;
    } else {
      report(n, "invalid or overflowing shape " + shapeText(n.type.shape));
      ok = false;
    }
    if (!n.device.empty() && !isPlacedDevice(n.device) && !isValidGroupName(n.device))
      report(n, "unknown device '" + n.device + "'");
    if (n.isLeaf()) {
      if (!n.inputs.empty())
        report(n, "a leaf has no operands, found " + std::to_string(n.inputs.size()));
      if ((n.kind == NodeKind::Param || n.kind == NodeKind::State) && !n.init)
        report(n, "no initialiser");
      if (n.kind != NodeKind::Input && n.type.dtype != DType::F32)
        report(n, "params and state must be f32, got " + n.type.str());
      if (n.kind == NodeKind::State) {
        const Node *p = g_.find(n.origin);
        if (!p || p->kind != NodeKind::Param)
          report(n, "state of unknown param '" + n.origin + "'");
      }
      return false;
    }
    if (size_t(n.op) >= kNumOps) {
      report("'" + n.name + "': invalid op kind " + std::to_string(unsigned(n.op)));
      return false;
    }
    const OpInfo &info = n.info();
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!isMember(n.inputs[i])) {
        report(n, "operand " + std::to_string(i) + " is not a value of this graph");
        ok = false;
      }
    }
    int arity = int(n.inputs.size());
    if (!info.acceptsArity(arity)) {
      report(n, "takes " + info.arityText() + " operand(s), has " + std::to_string(arity));
      ok = false;
    }
    for (const auto &[k, v] : n.attrs) {
      const AttrSpec *spec = info.findAttr(k);
      if (!spec) {
        report(n, "unknown attribute '" + k + "'");
        ok = false;
      } else if (attrTypeOf(v) != spec->type) {
        report(n, "attribute '" + k + "' must be " + attrTypeName(spec->type) + ", got " +
                      attrTypeName(attrTypeOf(v)));
        ok = false;
      }
    }
    for (const AttrSpec &spec : info.attrs)
      if (!n.attrs.count(spec.name)) {
        report(n, "missing attribute '" + spec.name + "'");
        ok = false;
      }
    return ok;
  }

  bool checkAcyclic() {
    for (const auto &n : g_.nodes())
      for (const Node *in : n->inputs)
        if (!isMember(in)) return false; // reported already; topoOrder would misread it
    try {
      g_.topoOrder();
      return true;
    } catch (const RuleError &e) {
      report(e.what());
      return false;
    }
  }

  void checkType(const Node &n) {
    // Sound nodes' operands are nodes of the graph, checked by checkNode.
    for (const Node *in : n.inputs)
      if (!shapeOk_[size_t(in->id)]) return; // reported on the operand
    try {
      TensorType t = inferNodeType(n.info(), n.inputs, n.attrs);
      if (t != n.type)
        report(n, "stored type " + n.type.str() + " differs from the op rule's " + t.str());
    } catch (const RuleError &e) {
      report(n, std::string("shape rule fails: ") + e.what());
    }
  }

  void checkLossAndOutputs() {
    if (!g_.loss.empty()) {
      const Node *l = g_.find(g_.loss);
      if (!l) report("loss '" + g_.loss + "' is not a value of the graph");
      else if (g_.has(kShaped) && !(l->type.dtype == DType::F32 && l->type.shape.empty()))
        report(*l, "the loss must be a scalar f32, got " + l->type.str());
    }
    std::set<std::string> seen;
    for (const std::string &o : g_.outputs) {
      if (!g_.find(o)) report("output '" + o + "' is not a value of the graph");
      if (!seen.insert(o).second) report("output '" + o + "' is listed twice");
    }
  }

  void checkPlaced() {
    for (const auto &n : g_.nodes())
      if (!isPlacedDevice(n->device))
        report(*n, n->device.empty() ? std::string("not placed (graph claims placed)")
                                     : "device '" + n->device +
                                           "' is not concrete (graph claims placed)");
    for (const CollectiveProblem &p : checkCollectives(g_)) report(*p.node, p.message);
  }

  /// A mirror (a data-parallel replica's param or state) names a tensor of
  /// its own kind and type that mirrors nothing, on another device.
  void checkMirrors() {
    // A tensor-parallel part of a replica mirrors the same part of the
    // tensor (checkShards finds the parts by tensor and index).
    std::map<std::pair<std::string, int64_t>, const Node *> parts;
    for (const auto &n : g_.nodes())
      if (n->shardOf && n->mirrorOf.empty()) parts[{n->shardOf->of, n->shardOf->index}] = n.get();
    for (const auto &n : g_.nodes()) {
      if (n->mirrorOf.empty()) continue;
      if (n->shardOf) {
        auto it = parts.find({n->mirrorOf, n->shardOf->index});
        if (n->shardOf->axis < 0 || n->shardOf->of != n->mirrorOf)
          report(*n, "a mirrored shard must be a part along an axis of the tensor it mirrors");
        else if (it == parts.end() || it->second->type != n->type || it->second->kind != n->kind)
          report(*n, "mirrors part " + std::to_string(n->shardOf->index) + " of '" + n->mirrorOf +
                         "', which has no such part of its kind and type");
        continue;
      }
      const Node *m = g_.find(n->mirrorOf);
      if (n->kind != NodeKind::Param && n->kind != NodeKind::State)
        report(*n, "only a param or state mirrors another tensor");
      else if (!m || m->kind != n->kind)
        report(*n, "mirrors '" + n->mirrorOf + "', which is not a " + nodeKindName(n->kind));
      else if (!m->mirrorOf.empty())
        report(*n, "mirrors '" + m->name + "', itself a mirror of '" + m->mirrorOf + "'");
      else if (m->type != n->type)
        report(*n, "mirrors '" + m->name + "' of type " + m->type.str() + " with type " +
                       n->type.str());
    }
  }

  /// ZeRO-1 shards (Node::ShardOf): states of type f32[S], S =
  /// ops::shardElements of the tensor's size, each index of a tensor once,
  /// on distinct devices, the tensor itself no node.
  void checkShards() {
    struct Seen {
      const Node *first;
      std::set<int64_t> indices;
      std::set<std::string> devices;
    };
    std::map<std::string, Seen> tensors;
    for (const auto &n : g_.nodes()) {
      if (!n->shardOf) continue;
      const Node::ShardOf &s = *n->shardOf;
      if ((n->kind != NodeKind::State && !(n->kind == NodeKind::Param && s.axis >= 0)) ||
          (!n->mirrorOf.empty() && s.axis < 0)) {
        report(*n, "only a state, or a parameter split along an axis, that mirrors nothing is a "
                   "shard");
        continue;
      }
      if (s.count < 1 || s.index < 0 || s.index >= s.count) {
        report(*n, "shard " + std::to_string(s.index) + " of " + std::to_string(s.count) +
                       " is out of range");
        continue;
      }
      auto n64 = checkedNumElements(s.shape);
      if (!n64) {
        report(*n, "shard of a tensor with an invalid shape");
        continue;
      }
      TensorType want{DType::F32, {ops::shardElements(*n64, s.count)}};
      if (s.axis >= 0) {
        want.shape = s.shape;
        if (size_t(s.axis) >= s.shape.size() || s.shape[size_t(s.axis)] % s.count != 0) {
          report(*n, "shard_of '" + s.of + "' " + shapeText(s.shape) + " does not split along axis " +
                         std::to_string(s.axis) + " into " + std::to_string(s.count) + " parts");
          continue;
        }
        want.shape[size_t(s.axis)] /= s.count;
      }
      if (n->type != want)
        report(*n, "shard " + std::to_string(s.index) + " of " + std::to_string(s.count) +
                       " of '" + s.of + "' " + TensorType{DType::F32, s.shape}.str() +
                       " must be " + want.str() + ", got " + n->type.str());
      if (g_.find(s.of))
        report(*n, "is a shard of '" + s.of + "', which is a node of the graph");
      if (!n->mirrorOf.empty()) continue; // a replica's part: checkMirrors
      auto [it, fresh] = tensors.emplace(s.of, Seen{n.get(), {}, {}});
      const Node::ShardOf &first = *it->second.first->shardOf;
      if (!fresh && (first.count != s.count || first.shape != s.shape || first.axis != s.axis))
        report(*n, "is a shard of '" + s.of + "' unlike " + it->second.first->describe());
      if (!it->second.indices.insert(s.index).second)
        report(*n, "is shard " + std::to_string(s.index) + " of '" + s.of + "' a second time");
      if (!it->second.devices.insert(n->device).second && parseDevice(n->device))
        report(*n, "is a second shard of '" + s.of + "' on " + n->device);
    }
    for (const auto &[name, seen] : tensors)
      if (int64_t(seen.indices.size()) != seen.first->shardOf->count)
        report(*seen.first, "'" + name + "' has " + std::to_string(seen.indices.size()) +
                                " of its " + std::to_string(seen.first->shardOf->count) +
                                " shards");
  }

  void checkCopies() {
    std::map<std::pair<const Node *, std::string>, const Node *> copies;
    for (const auto &n : g_.nodes()) {
      if (!n->isOp()) continue;
      if (n->info().has(kCollective)) continue; // checkPlaced's
      if (n->info().has(kTransfer)) {
        if (n->inputs.size() != 1) continue; // arity reported
        const Node *src = n->inputs[0];
        if (src->device == n->device)
          report(*n, "copy of " + src->describe() + " within device '" + n->device + "'");
        auto [it, inserted] = copies.emplace(std::make_pair(src, n->device), n.get());
        if (!inserted)
          report(*n, "second copy of " + src->describe() + " to '" + n->device +
                         "' (first: '" + it->second->name + "')");
        continue;
      }
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const Node *in = n->inputs[i];
        if (in->device != n->device)
          report(*n, "operand " + std::to_string(i) + " " + in->describe() + " is on '" +
                         in->device + "', not on '" + n->device + "', and not through copy");
      }
    }
  }

  /// Params from which the loss is reachable through differentiable edges.
  std::vector<const Node *> paramsReachingLoss() const {
    std::vector<const Node *> out;
    const Node *loss = g_.find(g_.loss);
    if (!loss) return out;
    // Indexed by node id: the graph is acyclic, so every operand is a node
    // of this graph.
    std::vector<char> seen(g_.idBound(), 0);
    seen[size_t(loss->id)] = 1;
    std::vector<const Node *> stack{loss};
    while (!stack.empty()) {
      const Node *n = stack.back();
      stack.pop_back();
      if (n->kind == NodeKind::Param) out.push_back(n);
      if (!n->isOp() || n->info().has(kStopsGradient)) continue;
      for (const Node *in : n->inputs)
        if (!seen[size_t(in->id)]) {
          seen[size_t(in->id)] = 1;
          stack.push_back(in);
        }
    }
    return out;
  }

  void checkGradients() {
    // Each entry's two names are looked up once, here; the params are then
    // checked through gradOf, by id.
    std::vector<const Node *> gradOf(g_.idBound(), nullptr);
    std::vector<char> hasEntry(g_.idBound(), 0);
    for (const auto &[param, grad] : g_.gradients) {
      const Node *p = g_.find(param);
      if (!p || p->kind != NodeKind::Param)
        report("gradient entry for '" + param + "', which is not a param");
      const Node *gnode = g_.find(grad);
      if (!gnode)
        report("gradient '" + grad + "' of '" + param + "' is not a value of the graph");
      if (p) {
        hasEntry[size_t(p->id)] = 1;
        gradOf[size_t(p->id)] = gnode;
      }
    }
    std::vector<const Node *> reaching = paramsReachingLoss();
    std::vector<char> reachingSet(g_.idBound(), 0);
    for (const Node *p : reaching) reachingSet[size_t(p->id)] = 1;
    for (const auto &n : g_.nodes()) {
      if (n->kind != NodeKind::Param || !reachingSet[size_t(n->id)]) continue;
      if (!hasEntry[size_t(n->id)]) {
        report(*n, "reaches the loss but has no gradient (graph claims differentiated)");
        continue;
      }
      const Node *gnode = gradOf[size_t(n->id)];
      if (!gnode) continue; // reported above
      if (gnode->type != n->type)
        report(*n, "gradient " + gnode->describe() + " has type " + gnode->type.str() +
                       ", not " + n->type.str());
      if (gnode->device != n->device)
        report(*n, "gradient " + gnode->describe() + " is on '" + gnode->device +
                       "', not on '" + n->device + "'");
    }
  }

  void checkOptimizer() {
    for (const auto &n : g_.nodes()) {
      if (!n->isOp() || !n->info().has(kOptimizer) || n->inputs.empty()) continue;
      const Node *param = n->inputs[0];
      if (n->device != param->device)
        report(*n, "update of " + param->describe() + " is not on its device '" +
                       param->device + "'");
      for (const Node *in : n->inputs)
        if (in->kind == NodeKind::State && in->device != param->device)
          report(*n, "state " + in->describe() + " is on '" + in->device + "', not on '" +
                         param->device + "' with its param " + param->describe());
    }
  }

  const Graph &g_;
  std::vector<std::string> errors_;
  /// By node id: whether checkNode found the node's shape valid.
  std::vector<char> shapeOk_;
};

} // namespace

std::vector<std::string> verifyGraph(const Graph &graph) { return Verifier(graph).run(); }

} // namespace mpc::ir
