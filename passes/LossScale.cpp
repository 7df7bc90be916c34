//===- passes/LossScale.cpp - fp16's dynamic loss scaling ----------------===//
//
// Invariant established (--precision=fp16, a training graph): the backward
// starts from the loss scale S instead of 1, so every gradient is S times
// the true one and small gradients survive f16; every update (sgd_update,
// adam_update) reads its gradient divided by S and is `guarded` by the
// number of inf and NaN elements in all devices' gradients, which skips the
// step when non-zero; the scaler's state (loss_scale, its good_steps and
// skipped) is kept on every device that updates and on the loss's device,
// equal everywhere (Node::mirrorOf: a checkpoint holds one copy), and moved
// once per step by loss_scale_update from the same count, as
// torch.cuda.amp.GradScaler does: start at 2^16, halve and skip on inf or
// NaN, double after 2000 clean steps. Division by a power of two is exact,
// so a step that is not skipped updates exactly as without scaling, unless
// a gradient underflowed or overflowed in f16.
//
// With tensor-parallel groups the pass runs after tensor-parallel, on the
// members: a split gradient's parts are counted by their own devices (a
// partial sum of the whole's count: count_nonfinite's sharding rule), a
// whole gradient by its group's first member only, so the job's total is
// each element counted once; the two sums are all-reduced apart (a partial
// sum and a whole value cannot meet in one op outside their group), and
// an update's unscaled gradient is a member in the gradient's layout.
//
// Algorithm:
//   1. The group: the devices of the updates and of the loss and its seed,
//      sorted.
//   2. The scaler's state on each device of the group (mirrors of the
//      first device's), and each device's S as a scalar.
//   3. The seed: autodiff's fill(1) `<loss>.grad` (and its members, under
//      tensor parallelism) becomes its device's S.
//   4. Each device's count_nonfinite over its updates' gradients (a device
//      without updates counts nothing: fill(0)); summed over the group by an
//      all_reduce (in group order: every device gets the same count). Split
//      gradients' counts are all-reduced apart and added.
//   5. Each update reads grad / S and the count as its `skip`; each device's
//      loss_scale_update moves its copy of the scaler.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/Device.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace mpc::passes {

using ir::Graph;
using ir::Node;

namespace {

/// GradScaler's defaults (torch.cuda.amp.GradScaler).
constexpr double kInitialScale = 65536.0;

struct Scaler {
  Node *scale = nullptr, *goodSteps = nullptr, *skipped = nullptr;
  Node *scalar = nullptr; ///< scale as f32[]
  Node *found = nullptr;  ///< the group's count of inf and NaN
};

class LossScalePass : public Pass {
public:
  bool run(Graph &g, PassContext &ctx) override {
    g.precision = effectivePrecision(g, ctx.options);
    if (g.precision != "fp16" || !g.has(ir::kOptimized) || g.loss.empty()) return false;
    for (const auto &n : g.nodes())
      if (n->isOp(ir::OpKind::LossScaleUpdate)) return false; // already scaled
    Node *loss = g.find(g.loss);
    // The seed and, after tensor-parallel, its members on the loss group.
    std::vector<Node *> seeds;
    for (const auto &n : g.nodes())
      if (n->name == g.loss + ".grad" || (n->spmd && n->spmd->of == g.loss + ".grad"))
        seeds.push_back(n.get());
    if (!loss || seeds.empty() || !seeds[0]->isOp(ir::OpKind::Fill))
      throw InternalError("loss-scale: no seed gradient '" + g.loss + ".grad' from autodiff");

    // Step 1.
    std::map<std::string, std::vector<Node *>> updates;
    for (const auto &n : g.nodes())
      if (n->isOp(ir::OpKind::SgdUpdate) || n->isOp(ir::OpKind::AdamUpdate))
        updates[n->device].push_back(n.get());
    if (updates.empty()) return false;
    std::set<std::string> group;
    for (const auto &[device, us] : updates) group.insert(device);
    group.insert(loss->device);
    for (const Node *seed : seeds) group.insert(seed->device);
    for (const std::string &d : group)
      if (d.empty() || ir::parseDeviceSet(d))
        throw InternalError("loss-scale: a node without a concrete device");

    // Step 2.
    // State belongs to a parameter (Graph::addState); the scaler is the
    // whole model's: it names the first parameter (a ZeRO update's operand
    // is a shard, not the parameter).
    std::string param;
    for (const auto &n : g.nodes())
      if (n->kind == ir::NodeKind::Param && n->namesTensor()) {
        param = n->name;
        break;
      }
    if (param.empty()) throw InternalError("loss-scale: updates without a parameter");
    std::map<std::string, Scaler> scalers;
    Scaler *first = nullptr;
    for (const std::string &d : group) {
      Scaler &s = scalers[d];
      std::string on = d;
      on.erase(std::remove(on.begin(), on.end(), ':'), on.end()); // "cpu1", as copies say
      auto state = [&](const std::string &base, ir::InitSpec init, Node *original) {
        Node *n = g.addState(g.uniqueName(original ? base + ".on." + on : base),
                             ir::TensorType{ir::DType::F32, {1}}, init, param);
        n->device = d;
        if (original) n->mirrorOf = original->name;
        ctx.count("loss-scale", "state-tensors");
        return n;
      };
      s.scale = state("loss_scale", ir::InitSpec{ir::InitSpec::Constant, kInitialScale},
                      first ? first->scale : nullptr);
      s.goodSteps = state("loss_scale.good_steps", ir::InitSpec{ir::InitSpec::Zeros},
                          first ? first->goodSteps : nullptr);
      s.skipped = state("loss_scale.skipped", ir::InitSpec{ir::InitSpec::Zeros},
                        first ? first->skipped : nullptr);
      ir::Builder b = builder(g, d);
      s.scalar = b.create(ir::OpKind::Reshape, {s.scale}, {{"shape", ir::Shape{}}},
                          s.scale->name + ".value");
      if (!first) first = &s;
    }

    // Step 3.
    for (Node *seed : seeds) {
      g.replaceAllUses(seed, scalers.at(seed->device).scalar);
      g.erase(seed);
    }

    // Step 4.
    std::map<std::string, std::vector<Node *>> whole, split;
    bool anySplit = false;
    for (const auto &[d, us] : updates)
      for (Node *u : us) {
        Node *grad = u->inputs[1];
        const bool isSplit = grad->spmd && grad->spmd->layout.split();
        std::vector<Node *> &list = (isSplit ? split : whole)[d];
        // A whole value of a group is counted by its first member only.
        if (!isSplit && grad->spmd && grad->spmd->index != 0) continue;
        if (std::find(list.begin(), list.end(), grad) == list.end()) list.push_back(grad);
        anySplit |= isSplit;
      }
    std::vector<Node *> counts, splitCounts;
    for (const std::string &d : group) {
      ir::Builder b = builder(g, d);
      counts.push_back(countOf(b, whole[d], "loss_scale.count"));
      if (!anySplit) continue;
      std::optional<ir::Node::Spmd> member;
      if (const std::vector<Node *> &parts = split[d]; !parts.empty())
        // Members of the partial count of this device's group.
        member = ir::Node::Spmd{"loss_scale.count.split@" + groupOf(g, parts[0]),
                                parts[0]->spmd->index, parts[0]->spmd->size, ops::Layout::p()};
      splitCounts.push_back(countOf(b, split[d], "loss_scale.count.split", member));
    }
    for (const std::string &d : group) {
      ir::Builder b = builder(g, d);
      Scaler &s = scalers[d];
      s.found = group.size() == 1
                    ? counts[0]
                    : b.create(ir::OpKind::AllReduce, counts, {}, "loss_scale.found");
      if (anySplit)
        s.found = b.add(s.found, b.create(ir::OpKind::AllReduce, splitCounts, {},
                                          "loss_scale.found.split"));
    }

    // Step 5.
    for (auto &[d, us] : updates) {
      Scaler &s = scalers.at(d);
      ir::Builder b = builder(g, d);
      std::map<Node *, Node *> unscaled;
      for (Node *u : us) {
        Node *&grad = unscaled[u->inputs[1]];
        if (!grad) {
          const Node *scaled = u->inputs[1];
          grad = b.create(ir::OpKind::Div, {u->inputs[1], s.scalar}, {},
                          scaled->name + ".unscaled");
          // A member's part divided by S: a member of the unscaled value.
          if (scaled->spmd) {
            grad->spmd = scaled->spmd;
            grad->spmd->of += ".unscaled";
          }
        }
        u->inputs[1] = grad;
        u->inputs.push_back(s.found);
        u->attrs["guarded"] = true;
        ctx.count("loss-scale", "guarded-updates");
      }
    }
    for (const std::string &d : group) {
      Scaler &s = scalers.at(d);
      ir::Builder b = builder(g, d);
      b.create(ir::OpKind::LossScaleUpdate, {s.scale, s.goodSteps, s.skipped, s.found}, {},
               s.scale->name + ".update");
    }
    return true;
  }

private:
  /// count_nonfinite over `xs` (fill(0) for none), in parts of at most the
  /// variadic limit, summed. With `member`: xs are split members, and every
  /// node made is a member of a partial count (the last one of member->of).
  static Node *countOf(ir::Builder &b, const std::vector<Node *> &xs, const std::string &name,
                       const std::optional<ir::Node::Spmd> &member = std::nullopt) {
    if (xs.empty()) return b.fill(0.0, {1});
    Node *count = nullptr;
    for (size_t i = 0; i < xs.size(); i += ops::OpSchema::kMaxVariadicArity) {
      std::vector<Node *> part(xs.begin() + long(i),
                               xs.begin() + long(std::min(xs.size(),
                                                          i + ops::OpSchema::kMaxVariadicArity)));
      Node *c = b.create(ir::OpKind::CountNonfinite, part, {}, name);
      if (member) {
        c->spmd = member;
        c->spmd->of += ".part" + std::to_string(i);
      }
      if (count) {
        count = b.add(count, c);
        if (member) {
          count->spmd = member;
          count->spmd->of += ".sum" + std::to_string(i);
        }
      }
      else count = c;
    }
    if (member) count->spmd = member;
    return count;
  }

  /// The devices of the tensor-parallel group holding member `m`, joined.
  static std::string groupOf(const Graph &g, const Node *m) {
    std::set<std::string> devices;
    for (const auto &n : g.nodes())
      if (n->spmd && n->spmd->of == m->spmd->of) devices.insert(n->device);
    std::string out;
    for (const std::string &d : devices) out += (out.empty() ? "" : "+") + d;
    return out;
  }

  static ir::Builder builder(Graph &g, const std::string &device) {
    ir::Builder b(g);
    b.device = device;
    b.backward = true;
    return b;
  }
};

} // namespace

std::unique_ptr<Pass> createLossScalePass() { return std::make_unique<LossScalePass>(); }

} // namespace mpc::passes
