//===- codegen/PipelineSchedule.cpp - pipeline schedules as node orders --===//
//
// A micro-batched graph (passes/Microbatch.cpp) holds every micro-batch's
// forward and backward explicitly. Which one a device works on when is the
// schedule, and it is compile-time data: this file turns the schedule into
// one global execution order, from which Schedule.cpp derives each device's
// instruction list exactly as for an unpipelined graph (sends right after
// the producer, receives right before the first use).
//
// Actions. Every op node that belongs to one micro-batch k belongs to an
// action F(stage, k) or B(stage, k). The stage is the node's *virtual stage*:
// the number of device changes on the longest path from an input to the node
// (so a chain placed cpu:0, cpu:1, cpu:0, cpu:1 has virtual stages 0..3, two
// per device, as Megatron's interleaving wants); a backward node takes the
// stage of the forward node it differentiates. Nodes that belong to no single
// micro-batch (gradient accumulation, the loss's sum over micro-batches,
// copies of parameters) are *floating*; optimizer updates are the U action.
//
// Zero-bubble schedules (zb-h1, zb-h2; Qi et al., ICLR 2024) split each
// backward action in two: B(stage, k), the nodes whose results another
// action needs (the input gradient the previous stage waits for, and what
// leads to it), and W(stage, k), the rest (the weight gradients, which only
// the gradient accumulation and the update read). B stays on the critical
// path between stages; W may wait and fill the time a device would idle.
//
// Tensor-parallel groups. The devices of a group (the members of its values,
// Node::spmd) run every action together, meeting in its collectives: the
// simulation treats the group as one device, its lowest, whose actions hold
// the nodes of all its members. Only a change of group is a change of stage.
//
// Sequences. Each device runs its actions in a fixed sequence, Megatron's:
// W warm-up forwards, then one forward and one backward in turn, then the
// remaining backwards. Forwards come in queue order, backwards likewise:
//   gpipe             W = every forward: all forwards, then all backwards.
//   1f1b              W = p - r - 1 (r: the device's rank in the pipeline,
//                     p: the number of devices), so stage r holds at most
//                     p - r micro-batches in flight.
//   interleaved-1f1b  over virtual stages, micro-batches in groups of p, each
//                     group through the device's stages in turn (backwards in
//                     reverse stage order); W = 2(p - r - 1) + (v - 1)p with
//                     v stages per device.
// (A device with several stages under plain 1f1b takes W = (p - r - 1)v.)
//   zb-h1, zb-h2      the 1f1b sequence of F and B, and at most L
//                     micro-batches open on the device (forward begun, last
//                     backward action not yet). zb-h1: W = p - r - 1 and
//                     L = p on every stage, the bound of 1F1B's first stage
//                     (the paper's "same number of micro-batches in flight"
//                     on all stages): stage r may keep up to r W actions
//                     waiting, so its next B, on the chain back to the first
//                     stage, need not queue behind them. A waiting W holds
//                     less than an open forward (its input and its output
//                     gradient). zb-h2: W = 2(p - r - 1) and L = 2p - 1 on
//                     every stage, twice 1F1B's first stage: the extra
//                     forwards fill the warm-up, and the last stages may put
//                     their W off to the end, where the first stages would
//                     otherwise wait. An in-flight bound N
//                     (ir::PipelineSpec::inFlight, --in-flight) raises L to
//                     N on every stage; it may not lower it, as the warm-up
//                     forwards must fit. The W actions wait
//                     in micro-batch order: the oldest runs when the next F
//                     would open one micro-batch too many, and whenever the
//                     next F or B is not ready (its data is still on another
//                     device).
//
// Simulation. Devices are simulated on a clock where F, B and W actions take
// one tick, floating nodes none. An idle device first runs every floating node
// that is ready (so gradients accumulate as soon as they exist and a
// micro-batch's activations die with its backward), then the next action of
// its sequence if everything it reads exists. If no device can move while
// work remains (an irregular placement the sequence does not suit), the first
// device with a ready action further down its sequence runs it: the
// simulation never stalls.
//
// Why zero-bubble schedules compute the same bits. A micro-batch's weight
// gradients are summed into the accumulator in micro-batch order by the
// graph's own nodes (passes/BatchSplit.cpp), whatever action computes them
// and whenever it runs; no schedule changes an operand or an order of
// summation.
//
// Why the order is deadlock-free. A node is appended to the order only once
// every node it depends on has finished in the simulation, so the order is
// topological; Schedule.cpp's argument then applies unchanged: every device
// runs its own subsequence, sends never block, and each receive's send comes
// earlier in the order. plan::verifyPlan re-checks it on load.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerSteps.h"

#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

namespace mpc::codegen {

bool isPipelined(const ir::Graph &graph) {
  if (graph.pipeline.microbatches <= 1) return false;
  for (const auto &n : graph.nodes())
    if (n->microbatch >= 0) return true;
  return false;
}

namespace {

constexpr int kFloating = -1;

struct ActionKey {
  uint32_t device = 0;
  plan::Action::Kind kind = plan::Action::Forward;
  int stage = 0, microbatch = 0;
  auto tie() const { return std::tie(device, kind, stage, microbatch); }
  bool operator<(const ActionKey &o) const { return tie() < o.tie(); }
};

struct SimAction {
  ActionKey key;
  std::vector<size_t> nodes; ///< in topological order
};

class PipelineSimulator {
public:
  explicit PipelineSimulator(LoweringState &st)
      : st_(st), nodes_(st.graph.nodes()), schedule_(st.graph.pipeline.schedule),
        m_(st.graph.pipeline.microbatches), inFlight_(st.graph.pipeline.inFlight) {}

  void run() {
    buildUnits();
    buildDependencies();
    assignMicrobatches();
    assignStages();
    if (zeroBubble()) assignWeightGradients();
    buildActions();
    checkInFlight();
    simulate();
    st_.plan.pipeline.microbatches = m_;
    st_.plan.pipeline.schedule = schedule_;
    st_.plan.pipeline.inFlight = inFlight_;
    for (const auto &[stage, device] : stageDevice_) st_.plan.pipeline.stages.push_back(device);
  }

private:
  size_t indexOf(const ir::Node *n) const { return index_.at(n); }

  /// Each device's unit: its tensor-parallel group's lowest device, or
  /// itself.
  void buildUnits() {
    unit_.resize(st_.devices.size());
    for (uint32_t d = 0; d < unit_.size(); ++d) unit_[d] = d;
    std::function<uint32_t(uint32_t)> find = [&](uint32_t d) {
      return unit_[d] == d ? d : unit_[d] = find(unit_[d]);
    };
    std::map<std::string, uint32_t> first; // logical value -> a member's device
    for (const auto &n : nodes_) {
      if (!n->spmd) continue;
      uint32_t d = st_.deviceOf(n.get());
      auto [it, fresh] = first.emplace(n->spmd->of, d);
      if (fresh) continue;
      uint32_t a = find(it->second), b = find(d);
      if (a != b) unit_[std::max(a, b)] = std::min(a, b);
    }
    for (uint32_t d = 0; d < unit_.size(); ++d) unit_[d] = find(d);
  }
  uint32_t unitOf(const ir::Node *n) const { return unit_[st_.deviceOf(n)]; }
  bool sameUnit(const ir::Node *a, const ir::Node *b) const { return unitOf(a) == unitOf(b); }
  bool zeroBubble() const { return ir::isZeroBubbleSchedule(schedule_); }


  void buildDependencies() {
    for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].get()] = i;
    users_ = st_.graph.userMap();
    succ_ = executionSuccessors(st_.graph);
    preds_.assign(nodes_.size(), {});
    for (size_t i = 0; i < succ_.size(); ++i)
      for (size_t j : succ_[i]) preds_[j].push_back(i);
  }

  /// A node's micro-batch: its own (replicas, input slices) or that of its
  /// operands when they agree; kFloating when none or several.
  void assignMicrobatches() {
    constexpr int kNone = -2;
    mb_.assign(nodes_.size(), kNone);
    for (const ir::Node *n : st_.topo) {
      size_t i = indexOf(n);
      if (n->microbatch >= 0) {
        mb_[i] = n->microbatch;
        continue;
      }
      int m = kNone;
      for (const ir::Node *in : n->inputs) {
        int k = mb_[indexOf(in)];
        if (k == kNone) continue;
        m = (m == kNone || m == k) ? k : kFloating;
      }
      if (n->isOp() && n->info().has(ir::kOptimizer)) m = kFloating;
      mb_[i] = m;
    }
    for (int &m : mb_)
      if (m == kNone) m = kFloating;
    // A forward copy that feeds floating nodes only (a data-parallel
    // replica's loss part moving to replica 0's device for the full-batch
    // sum) floats too: as an action of replica 0's device it would tie that
    // device's sequence to replica r's progress.
    for (auto it = st_.topo.rbegin(); it != st_.topo.rend(); ++it) {
      const ir::Node *n = *it;
      size_t i = indexOf(n);
      if (!n->isOp(ir::OpKind::Copy) || n->backward || mb_[i] == kFloating) continue;
      auto u = users_.find(n);
      if (u == users_.end() || u->second.empty()) continue;
      bool feedsFloating = true;
      for (const ir::Node *x : u->second) feedsFloating = feedsFloating && mb_[indexOf(x)] == kFloating;
      if (feedsFloating) mb_[i] = kFloating;
    }
  }

  /// Virtual stages of forward nodes, then of backward nodes by origin.
  void assignStages() {
    stage_.assign(nodes_.size(), -1);
    // A forward node fed by leaves only (an input slice, a fill) starts at
    // stage 0 for the nodes it feeds, and then joins its first user's stage:
    // the labels' slice on the last device belongs to the last stage.
    // A copy of such a node counts as fed by leaves too: a data-parallel
    // replica's rows, sliced on replica 0's device, start its own stage 0.
    // A copy of a leaf within a tensor-parallel group (an input sent to the
    // group's other devices) stands for the leaf.
    std::vector<bool> leafFed(nodes_.size(), false), leafLike(nodes_.size(), false);
    for (const ir::Node *n : st_.topo) {
      if (!n->isOp() || n->backward) continue;
      if (n->isOp(ir::OpKind::Copy) && n->inputs.size() == 1 && sameUnit(n, n->inputs[0]) &&
          (!n->inputs[0]->isOp() || leafLike[indexOf(n->inputs[0])]))
        leafLike[indexOf(n)] = true;
      int s = -1;
      if (!(n->isOp(ir::OpKind::Copy) && n->inputs.size() == 1 &&
            leafFed[indexOf(n->inputs[0])]))
        for (const ir::Node *in : n->inputs) {
          int si = stage_[indexOf(in)];
          if (si < 0 || leafLike[indexOf(in)]) continue;
          s = std::max(s, si + (sameUnit(in, n) ? 0 : 1));
        }
      leafFed[indexOf(n)] = s < 0;
      stage_[indexOf(n)] = std::max(s, 0);
    }
    for (auto it = st_.topo.rbegin(); it != st_.topo.rend(); ++it) {
      const ir::Node *n = *it;
      size_t i = indexOf(n);
      if (!n->isOp() || n->backward || !leafFed[i]) continue;
      int s = std::numeric_limits<int>::max();
      for (const ir::Node *u : users_[n])
        if (sameUnit(u, n) && !u->backward && stage_[indexOf(u)] >= 0)
          s = std::min(s, stage_[indexOf(u)]);
      stage_[i] = s == std::numeric_limits<int>::max() ? 0 : s;
    }
    for (const ir::Node *n : st_.topo) {
      if (!n->isOp() || !n->backward) continue;
      const ir::Node *origin = st_.graph.find(n->origin);
      if (!origin || origin->backward) continue;
      if (sameUnit(origin, n)) stage_[indexOf(n)] = stage_[indexOf(origin)];
      else if (origin->isOp(ir::OpKind::Copy) && !origin->inputs.empty() &&
               sameUnit(origin->inputs[0], n))
        stage_[indexOf(n)] = stage_[indexOf(origin->inputs[0])];
    }
  }

  /// Zero-bubble schedules: a weight gradient summed over micro-batches is
  /// a chain of nodes, each taking the sum so far (the fused matmul of
  /// Autodiff's accumulate), so it belongs to no single micro-batch and
  /// would float. Each link belongs to the latest micro-batch it reads: it
  /// is that micro-batch's weight-gradient work, W(stage, k).
  void assignWeightGradients() {
    // Its stage is that micro-batch's operand's (its origin is the
    // parameter, a leaf without one).
    wmb_.assign(nodes_.size(), kFloating);
    for (const ir::Node *n : st_.topo) {
      size_t i = indexOf(n);
      if (!n->isOp() || !n->backward || mb_[i] != kFloating || n->info().has(ir::kOptimizer) ||
          n->info().has(ir::kCollective) || n->isTransfer())
        continue;
      int k = kFloating, stage = -1;
      for (const ir::Node *in : n->inputs) {
        size_t j = indexOf(in);
        int kj = std::max(mb_[j], wmb_[j]);
        if (kj > k || (kj == k && sameUnit(in, n) && stage_[j] > stage)) {
          k = kj;
          stage = sameUnit(in, n) ? stage_[j] : -1;
        }
      }
      if (k == kFloating || stage < 0) continue;
      wmb_[i] = k;
      stage_[i] = stage;
    }
  }

  /// The action a node belongs to; nullopt when it floats.
  std::optional<ActionKey> keyOf(const ir::Node *n) const {
    size_t i = indexOf(n);
    uint32_t d = unitOf(n);
    if (n->info().has(ir::kOptimizer) || stage_[i] < 0) return std::nullopt;
    if (mb_[i] == kFloating) {
      if (zeroBubble() && wmb_[i] != kFloating)
        return ActionKey{d, plan::Action::WeightGrad, stage_[i], wmb_[i]};
      return std::nullopt;
    }
    return ActionKey{d, n->backward ? plan::Action::Backward : plan::Action::Forward, stage_[i],
                     mb_[i]};
  }

  /// Actions from each node's key, nodes in topological order.
  void collectActions(const std::vector<std::optional<ActionKey>> &keys) {
    std::map<ActionKey, size_t> byKey;
    actions_.clear();
    floating_.assign(st_.devices.size(), {});
    actionOf_.assign(nodes_.size(), SIZE_MAX);
    for (const ir::Node *n : st_.topo) {
      if (!n->isOp()) continue;
      size_t i = indexOf(n);
      if (!keys[i]) {
        floating_[unitOf(n)].push_back(i);
        continue;
      }
      auto [it, fresh] = byKey.emplace(*keys[i], actions_.size());
      if (fresh) actions_.push_back({*keys[i], {}});
      actions_[it->second].nodes.push_back(i);
      actionOf_[i] = it->second;
    }
  }

  /// Zero-bubble schedules: what of a backward action no other action needs
  /// (but W actions, which wait anyway) moves to its W action. A node is B
  /// when a later node of its action that is B, a node of another F or B
  /// action, or a transfer to another device reads it.
  void splitBackwards(std::vector<std::optional<ActionKey>> &keys) {
    std::vector<char> isB(nodes_.size(), 0);
    for (size_t a = 0; a < actions_.size(); ++a) {
      const ActionKey k = actions_[a].key;
      if (k.kind != plan::Action::Backward) continue;
      const std::vector<size_t> &ns = actions_[a].nodes;
      for (auto it = ns.rbegin(); it != ns.rend(); ++it) {
        bool b = false;
        for (size_t v : succ_[*it]) {
          size_t av = actionOf_[v];
          if (av == a) b = b || isB[v];
          else if (av != SIZE_MAX) b = b || actions_[av].key.kind != plan::Action::WeightGrad;
          else b = b || nodes_[v]->isTransfer();
        }
        isB[*it] = b;
        if (!b) keys[*it] = ActionKey{k.device, plan::Action::WeightGrad, k.stage, k.microbatch};
      }
    }
  }

  void buildActions() {
    std::vector<std::optional<ActionKey>> keys(nodes_.size());
    for (const ir::Node *n : st_.topo)
      if (n->isOp()) keys[indexOf(n)] = keyOf(n);
    collectActions(keys);
    if (zeroBubble()) {
      splitBackwards(keys);
      collectActions(keys);
    }
    std::map<uint32_t, std::set<int>> stagesOf; // device -> its forward stages
    for (const SimAction &action : actions_) {
      const ActionKey &key = action.key;
      const uint32_t d = key.device;
      if (key.kind == plan::Action::Forward) {
        stagesOf[d].insert(key.stage);
        // Data-parallel replicas run the same stages on their own devices:
        // the plan names replica 0's (the lowest device index).
        auto [at, fresh] = stageDevice_.emplace(key.stage, d);
        if (!fresh) at->second = std::min(at->second, d);
      }
    }
    // A device's rank in its pipeline: the place of its first virtual stage
    // among the devices' first stages (every replica has the same).
    std::set<int> firsts;
    for (const auto &[d, ss] : stagesOf) firsts.insert(*ss.begin());
    p_ = int(firsts.size());
    for (const auto &[d, ss] : stagesOf) {
      rank_[d] = int(std::distance(firsts.begin(), firsts.find(*ss.begin())));
      v_ = std::max(v_, int(ss.size()));
    }

    // Each device's forward and backward queues, in the schedule's order.
    queues_.assign(st_.devices.size(), {});
    bool interleaved = schedule_ == "interleaved-1f1b";
    int group = std::max(p_, 1);
    auto fwdOrder = [&](const ActionKey &k) {
      return interleaved ? std::make_tuple(k.microbatch / group, k.stage, k.microbatch)
                         : std::make_tuple(0, k.microbatch, k.stage);
    };
    auto bwdOrder = [&](const ActionKey &k) {
      return interleaved ? std::make_tuple(k.microbatch / group, -k.stage, k.microbatch)
                         : std::make_tuple(0, k.microbatch, -k.stage);
    };
    for (size_t a = 0; a < actions_.size(); ++a) {
      const ActionKey &k = actions_[a].key;
      queues_[k.device][k.kind == plan::Action::Forward ? 0
                        : k.kind == plan::Action::Backward ? 1 : 2]
          .push_back(a);
    }
    for (auto &q : queues_) {
      std::sort(q[0].begin(), q[0].end(), [&](size_t a, size_t b) {
        return fwdOrder(actions_[a].key) < fwdOrder(actions_[b].key);
      });
      for (int w : {1, 2})
        std::sort(q[w].begin(), q[w].end(), [&](size_t a, size_t b) {
          return bwdOrder(actions_[a].key) < bwdOrder(actions_[b].key);
        });
    }
    // Zero-bubble schedules: the action that closes each (stage, k) on its
    // device, its W, else its B; a micro-batch is open from its F to that.
    closes_.assign(actions_.size(), 0);
    opens_.assign(actions_.size(), 0);
    std::map<ActionKey, size_t> last;
    for (size_t a = 0; a < actions_.size(); ++a) {
      ActionKey k = actions_[a].key;
      if (k.kind == plan::Action::Forward) continue;
      k.kind = plan::Action::Forward;
      auto [it, fresh] = last.emplace(k, a);
      if (!fresh && actions_[a].key.kind == plan::Action::WeightGrad) it->second = a;
    }
    for (size_t a = 0; a < actions_.size(); ++a)
      if (actions_[a].key.kind == plan::Action::Forward && last.count(actions_[a].key)) {
        opens_[a] = 1;
        closes_[last.at(actions_[a].key)] = 1;
      }
  }

  /// Zero-bubble schedules: the schedule's own bound on the micro-batches
  /// a stage holds open, p (zb-h1) or 2p - 1 (zb-h2).
  int64_t ownBound() const { return schedule_ == "zb-h2" ? 2 * int64_t(p_) - 1 : int64_t(p_); }

  /// An in-flight bound may only raise the schedule's own: below it the
  /// warm-up forwards the sequence starts with would not fit.
  void checkInFlight() const {
    if (inFlight_ == 0 || !zeroBubble() || inFlight_ >= ownBound()) return;
    throw UserError(st_.graph.sourceFile, "/pipeline/in_flight",
                    "in-flight bound " + std::to_string(inFlight_) + " is below " + schedule_ +
                        "'s own on " + std::to_string(p_) + " stages (" +
                        (schedule_ == "zb-h2" ? "2p - 1" : "p") + " = " +
                        std::to_string(ownBound()) +
                        " micro-batches): --in-flight (\"in_flight\") can raise it, not lower it");
  }

  /// Zero-bubble schedules: micro-batches a device may hold open (L).
  int64_t openBound(uint32_t d) const {
    if (!rank_.count(d)) return std::numeric_limits<int64_t>::max();
    return std::max(ownBound(), inFlight_) * v_;
  }

  /// Megatron's warm-up: forwards a device runs before its first backward.
  size_t warmup(uint32_t d, size_t total) const {
    auto r = rank_.find(d);
    if (schedule_ == "gpipe" || r == rank_.end()) return total;
    int64_t rank = r->second, w;
    if (schedule_ == "interleaved-1f1b") w = 2 * (p_ - rank - 1) + int64_t(v_ - 1) * p_;
    else if (schedule_ == "zb-h2") w = 2 * int64_t(p_ - rank - 1) * v_;
    else w = int64_t(p_ - rank - 1) * v_; // 1f1b, zb-h1
    return std::min(total, size_t(std::max<int64_t>(w, 0)));
  }

  /// Each device's sequence of actions: W forwards, then one forward and one
  /// backward in turn, then the remaining backwards (GPipe: W = all).
  void buildSequences() {
    sequence_.assign(queues_.size(), {});
    for (uint32_t d = 0; d < queues_.size(); ++d) {
      const auto &fq = queues_[d][0], &bq = queues_[d][1];
      size_t w = warmup(d, fq.size()), f = 0, b = 0;
      auto &seq = sequence_[d];
      for (; f < w; ++f) seq.push_back(fq[f]);
      while (f < fq.size() || b < bq.size()) {
        if (f < fq.size()) seq.push_back(fq[f++]);
        if (b < bq.size()) seq.push_back(bq[b++]);
      }
    }
  }

  bool nodeDone(size_t i, int64_t now) const { return finish_[i] <= now; }

  /// Every node `i` waits for has finished by `now`, apart from the nodes of
  /// its own action (`ownAction`; SIZE_MAX for a floating node).
  bool predsDone(size_t i, int64_t now, size_t ownAction) const {
    for (size_t j : preds_[i]) {
      if (ownAction != SIZE_MAX && actionOf_[j] == ownAction) continue;
      if (!nodeDone(j, now)) return false;
    }
    return true;
  }

  bool actionReady(size_t a, int64_t now) const {
    for (size_t i : actions_[a].nodes)
      if (!predsDone(i, now, a)) return false;
    return true;
  }

  void emit(size_t i, int64_t finish, const plan::Action &tag) {
    finish_[i] = finish;
    order_.push_back(i);
    tags_[i] = tag;
  }

  /// Runs the device's ready floating nodes at `now`; true if any ran.
  bool runFloating(uint32_t d, int64_t now) {
    bool any = false;
    for (bool again = true; again;) {
      again = false;
      for (size_t i : floating_[d]) {
        if (finish_[i] != kNever || !predsDone(i, now, SIZE_MAX)) continue;
        plan::Action tag = lastTag_[d];
        if (nodes_[i]->info().has(ir::kOptimizer)) tag = {plan::Action::Update, -1, -1};
        emit(i, now, tag);
        if (tag.kind == plan::Action::None) pendingPrologue_[d].push_back(i);
        again = any = true;
      }
    }
    return any;
  }

  void startAction(uint32_t d, size_t a, int64_t now) {
    const ActionKey &k = actions_[a].key;
    plan::Action tag{k.kind, k.stage, k.microbatch};
    // Floating work that ran before the device's first action is drawn with it.
    for (size_t i : pendingPrologue_[d]) tags_[i] = tag;
    pendingPrologue_[d].clear();
    for (size_t i : actions_[a].nodes) emit(i, now + 1, tag);
    lastTag_[d] = tag;
    busyUntil_[d] = now + 1;
    auto &seq = k.kind == plan::Action::WeightGrad ? waiting_[d] : sequence_[d];
    seq.erase(std::find(seq.begin(), seq.end(), a));
    open_[d] += int64_t(opens_[a]) - int64_t(closes_[a]);
    ++started_;
  }

  /// The next action of an idle device's sequence if it is ready; relaxed,
  /// the first ready action anywhere in the rest of its sequence.
  size_t choose(uint32_t d, int64_t now, bool relaxed) const {
    if (zeroBubble()) return chooseZeroBubble(d, now, relaxed);
    const auto &seq = sequence_[d];
    for (size_t a : seq) {
      if (actionReady(a, now)) return a;
      if (!relaxed) break;
    }
    return SIZE_MAX;
  }

  /// Zero-bubble: the next F or B of the sequence, unless an F would open
  /// more than L micro-batches; the oldest waiting W when that F must wait
  /// or the next action is not ready. Relaxed: the first ready action of
  /// the sequence, else the oldest W if ready.
  size_t chooseZeroBubble(uint32_t d, int64_t now, bool relaxed) const {
    const auto &seq = sequence_[d];
    size_t w = !waiting_[d].empty() && actionReady(waiting_[d].front(), now) ? waiting_[d].front()
                                                                              : SIZE_MAX;
    if (relaxed) {
      for (size_t a : seq)
        if (actionReady(a, now)) return a;
      return w;
    }
    if (seq.empty()) return w;
    size_t next = seq.front();
    if (opens_[next] && open_[d] >= openBound(d)) return w;
    if (actionReady(next, now)) return next;
    return w;
  }

  void simulate() {
    const size_t nd = st_.devices.size();
    finish_.assign(nodes_.size(), kNever);
    tags_.assign(nodes_.size(), {});
    busyUntil_.assign(nd, 0);
    buildSequences();
    waiting_.assign(nd, {});
    for (uint32_t d = 0; d < nd; ++d) waiting_[d] = queues_[d][2];
    open_.assign(nd, 0);
    lastTag_.assign(nd, {});
    pendingPrologue_.assign(nd, {});
    // Leaves exist before the step.
    for (const ir::Node *n : st_.topo)
      if (!n->isOp()) emit(indexOf(n), 0, {});
    size_t floatingTotal = 0;
    for (const auto &f : floating_) floatingTotal += f.size();

    int64_t now = 0;
    for (;;) {
      bool progress = true;
      while (progress) {
        progress = false;
        for (uint32_t d = 0; d < nd; ++d) {
          if (busyUntil_[d] > now) continue;
          progress |= runFloating(d, now);
          size_t a = choose(d, now, /*relaxed=*/false);
          if (a != SIZE_MAX) {
            startAction(d, a, now);
            progress = true;
          }
        }
      }
      if (started_ == actions_.size() && order_.size() == nodes_.size()) break;
      int64_t next = std::numeric_limits<int64_t>::max();
      for (uint32_t d = 0; d < nd; ++d)
        if (busyUntil_[d] > now) next = std::min(next, busyUntil_[d]);
      if (next != std::numeric_limits<int64_t>::max()) {
        now = next;
        continue;
      }
      // Nothing runs and nothing will finish: relax the in-flight bounds.
      bool moved = false;
      for (uint32_t d = 0; d < nd && !moved; ++d) {
        size_t a = choose(d, now, /*relaxed=*/true);
        if (a != SIZE_MAX) {
          startAction(d, a, now);
          moved = true;
        }
      }
      if (!moved)
        throw InternalError("pipeline schedule '" + schedule_ + "' stalls with " +
                            std::to_string(actions_.size() - started_) + " of " +
                            std::to_string(actions_.size()) + " actions and " +
                            std::to_string(nodes_.size() - order_.size()) +
                            " nodes not scheduled (" + std::to_string(floatingTotal) +
                            " floating)");
    }
    // Stages are numbered densely in pipeline order in the plan.
    std::map<int, int32_t> dense;
    for (const auto &[s, d] : stageDevice_) dense.emplace(s, int32_t(dense.size()));
    st_.topo.clear();
    for (size_t i : order_) {
      ir::Node *n = nodes_[i].get();
      st_.topo.push_back(n);
      if (!n->isOp()) continue;
      plan::Action tag = tags_[i];
      if (tag.stage >= 0) tag.stage = dense.count(tag.stage) ? dense.at(tag.stage) : -1;
      st_.actions[size_t(n->id)] = tag;
    }
  }

  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  LoweringState &st_;
  const std::vector<std::unique_ptr<ir::Node>> &nodes_;
  std::string schedule_;
  int64_t m_;
  std::map<const ir::Node *, size_t> index_;
  std::vector<uint32_t> unit_; ///< per device: its unit (buildUnits)
  /// Graph::userMap, once: the micro-batch and stage assignments read it.
  std::unordered_map<const ir::Node *, std::vector<ir::Node *>> users_;
  std::vector<std::vector<size_t>> preds_, succ_;
  std::vector<int> mb_, stage_;
  std::vector<int> wmb_; ///< zero-bubble: the micro-batch of a weight-gradient sum's link
  std::vector<SimAction> actions_;
  std::vector<size_t> actionOf_; ///< per node: its action, SIZE_MAX when floating
  std::vector<std::vector<size_t>> floating_;
  std::map<int, uint32_t> stageDevice_;
  std::map<uint32_t, int> rank_;
  int p_ = 0, v_ = 1;
  int64_t inFlight_; ///< zero-bubble: ir::PipelineSpec::inFlight (0: the schedule's own)
  std::vector<std::array<std::vector<size_t>, 3>> queues_; ///< F, B, W
  std::vector<char> opens_, closes_; ///< per action: opens / closes a micro-batch
  // Simulation state.
  std::vector<std::vector<size_t>> sequence_;
  std::vector<std::vector<size_t>> waiting_; ///< zero-bubble: W actions not started, in order
  std::vector<int64_t> open_;                ///< zero-bubble: micro-batches open per device
  std::vector<int64_t> finish_, busyUntil_;
  std::vector<plan::Action> tags_, lastTag_;
  std::vector<std::vector<size_t>> pendingPrologue_;
  std::vector<size_t> order_;
  size_t started_ = 0;
};

} // namespace

void orderNodesPipelined(LoweringState &st) { PipelineSimulator(st).run(); }

} // namespace mpc::codegen
