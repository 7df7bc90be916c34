//===- passes/Autodiff.cpp - the reverse-mode gradient graph ------------===//
//
// Invariant established (kDifferentiated): every parameter that reaches the
// loss through differentiable ops has a gradient value, recorded in
// Graph::gradients and sitting on the parameter's device; parameters that do
// not reach it are reported with a warning. Backward nodes are ordinary op
// nodes flagged `backward`, with `origin` naming their forward node.
//
// Algorithm (the generic part; each op's rule is its OpInfo::grad):
//   1. Keep the nodes on a path from a parameter to the loss: reachable from a
//      parameter (not through stop_gradient) and reaching the loss. Nothing
//      else gets a gradient (no gradients for data inputs).
//   2. Seed the loss's gradient with fill(1.0) on the loss's device, named
//      `<loss>.grad`.
//   3. Visit the kept op nodes in reverse topological order. A value's
//      gradient is the sum (add) of its consumers' contributions, in the
//      consumers' creation order (a contribution that is a fresh matmul adds
//      the running sum as its accumulator operand instead), built on the
//      value's own device and named `<value>.grad`; a contribution computed
//      on another device is first copied there (with explicit forward copies
//      this never happens: the copy rule already sends it back). The op's
//      gradient rule then runs with a Builder on the forward node's device,
//      names prefixed `<node>.grad`, and each result is reduced
//      (Builder::reduceToShape) to its operand's shape. A kept op without a
//      rule is an error naming the node.
//   4. Record each parameter's gradient, warn about the others, and erase the
//      gradient nodes nothing needs (e.g. a data input's gradient that a
//      rule computed alongside a kept one).
// Running the pass on a differentiated graph changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <algorithm>
#include <iostream>
#include <unordered_map>
#include <unordered_set>

namespace mpc::passes {

using ir::Builder;
using ir::Graph;
using ir::Node;

namespace {

class Autodiff {
public:
  Autodiff(Graph &g, PassContext &ctx) : g_(g), ctx_(ctx) {}

  void run() {
    Node *loss = g_.loss.empty() ? nullptr : g_.find(g_.loss);
    if (!loss) throw UserError(g_.sourceFile, "/loss", "autodiff needs a loss");
    if (loss->type != ir::TensorType{ir::DType::F32, {}})
      throw UserError(g_.sourceFile, "/loss",
                      "the loss " + loss->describe() + " must be a scalar f32, got " +
                          loss->type.str());
    firstNewId_ = nextId();
    std::vector<Node *> order = g_.topoOrder();
    // By id, over the nodes that exist now: the forward graph. (Arrays, not
    // hash sets: this pass visits every node and operand.)
    std::vector<char> kept = keptNodes(order, loss);
    contributions_.assign(g_.idBound(), {});

    // Step 2: the seed.
    Builder seed = builderFor(*loss, "");
    contributions_[size_t(loss->id)].push_back({loss->id, seed.create(ir::OpKind::Fill, {},
                                                          {{"value", 1.0}, {"shape", ir::Shape{}}},
                                                          loss->name + ".grad")});

    // Step 3.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node *n = *it;
      if (!kept[size_t(n->id)]) continue;
      Node *dOut = total(n);
      if (!dOut) continue;
      if (n->kind == ir::NodeKind::Param) {
        g_.gradients.set(n->name, dOut->name);
        continue;
      }
      if (!n->isOp()) continue;
      const ir::OpInfo &info = n->info();
      if (!info.grad)
        throw UserError(g_.sourceFile, n->where(),
                        n->describe() +
                            " is not differentiable but lies on a path from a parameter to "
                            "the loss");
      Builder b = builderFor(*n, n->name + ".grad");
      std::vector<Node *> grads;
      try {
        grads = info.grad(b, *n, dOut);
      } catch (const RuleError &e) {
        throw InternalError("gradient rule of " + n->describe() + " failed: " + e.what());
      }
      MPC_ASSERT(grads.size() == n->inputs.size(),
                 "gradient rule of " + n->describe() + " returned " +
                     std::to_string(grads.size()) + " gradients for " +
                     std::to_string(n->inputs.size()) + " operands");
      for (size_t i = 0; i < grads.size(); ++i) {
        Node *operand = n->inputs[i];
        if (!grads[i] || !kept[size_t(operand->id)]) continue;
        contributions_[size_t(operand->id)].push_back(
            {n->id, b.reduceToShape(grads[i], operand->type.shape)});
      }
    }

    // Step 4.
    for (const auto &node : g_.nodes())
      if (node->kind == ir::NodeKind::Param && !g_.gradients.count(node->name))
        std::cerr << (g_.sourceFile.empty() ? std::string("mpc") : g_.sourceFile)
                  << ": warning: param '" << node->name
                  << "' does not reach the loss and will not be trained\n";
    eraseDeadGradientNodes();
    ctx_.count("autodiff", "gradients", int64_t(g_.gradients.size()));
  }

private:
  int nextId() const { return g_.nodes().empty() ? 0 : g_.nodes().back()->id + 1; }

  Builder builderFor(const Node &forward, const std::string &prefix) {
    Builder b(g_);
    b.device = forward.device;
    b.namePrefix = prefix;
    b.backward = true;
    b.origin = forward.name;
    return b;
  }

  /// Step 1: nodes on a path from a parameter to the loss, flagged by id.
  std::vector<char> keptNodes(const std::vector<Node *> &order, const Node *loss) const {
    const size_t ids = g_.idBound();
    std::vector<char> fromParam(ids, 0), toLoss(ids, 0), kept(ids, 0);
    for (const Node *n : order) {
      if (n->kind == ir::NodeKind::Param) {
        fromParam[size_t(n->id)] = 1;
        continue;
      }
      if (!n->isOp() || n->info().has(ir::kStopsGradient) || n->info().has(ir::kOptimizer))
        continue;
      if (std::any_of(n->inputs.begin(), n->inputs.end(),
                      [&](const Node *in) { return fromParam[size_t(in->id)] != 0; }))
        fromParam[size_t(n->id)] = 1;
    }
    toLoss[size_t(loss->id)] = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      if (toLoss[size_t((*it)->id)])
        for (const Node *in : (*it)->inputs) toLoss[size_t(in->id)] = 1;
    for (const Node *n : order)
      kept[size_t(n->id)] = fromParam[size_t(n->id)] && toLoss[size_t(n->id)];
    return kept;
  }

  /// A node this pass created and that nothing else claims yet, which can
  /// therefore take the name `<value>.grad`.
  bool renamable(const Node *n) const {
    return n->id >= firstNewId_ && n->isOp() && !claimed(n);
  }

  /// The gradient of `v`: its contributions, moved to v's device and summed
  /// in the creation order of the consumers that made them. For a value used
  /// by every micro-batch that is micro-batch order, so each micro-batch's
  /// contribution is added (and freed) as soon as its backward has run.
  Node *total(Node *v) {
    auto &contributions = contributions_[size_t(v->id)];
    if (contributions.empty()) return nullptr;
    std::stable_sort(contributions.begin(), contributions.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<Node *> parts;
    for (const auto &[consumer, part] : contributions) parts.push_back(part);
    Builder b = builderFor(*v, "");
    std::string want = v->name + ".grad";
    for (Node *&p : parts)
      if (!p->device.empty() && !v->device.empty() && p->device != v->device) {
        p = b.copyTo(p, v->device);
        ctx_.count("autodiff", "gradient-copies");
      }
    Node *sum = parts.front();
    if (parts.size() == 1) {
      if (sum->name != want && renamable(sum) && !g_.find(want)) g_.rename(sum, want);
    } else {
      std::unordered_map<const Node *, int> times;
      for (const Node *p : parts) ++times[p];
      for (size_t i = 1; i < parts.size(); ++i)
        sum = accumulate(b, sum, parts[i], i + 1 == parts.size() ? want : want + ".partial",
                         times[parts[i]] == 1);
    }
    // One scan for all the parts the sum took over: erasing each alone
    // scanned the graph once per micro-batch.
    g_.eraseAll(fusedAway_);
    fusedAway_.clear();
    claim(sum);
    return sum;
  }

  /// sum + part. A part that is a matmul this pass just made, used nowhere
  /// else, takes the sum as its accumulator operand instead (op(a) op(b) + c
  /// in one GEMM): a weight gradient summed over micro-batches then costs no
  /// extra pass over memory, and codegen lets the sum be updated in place.
  Node *accumulate(Builder &b, Node *sum, Node *part, const std::string &name, bool single) {
    if (single && part->isOp(ir::OpKind::MatMul) && part->inputs.size() == 2 &&
        part->id >= firstNewId_ && !claimed(part) && usersOf(part) == 0) {
      Node *fused = b.create(ir::OpKind::MatMul, {part->inputs[0], part->inputs[1], sum},
                             part->attrs, name);
      countUses(*part, -1);
      fusedAway_.insert(part); // erased with the others once the sum is built
      return fused;
    }
    return b.create(ir::OpKind::Add, {sum, part}, {}, name);
  }

  /// How many op nodes use `n` (one using it twice counts once), as
  /// Graph::users would say. The counts are kept up to date by counting only
  /// the nodes made since the last question (nodes come in creation order,
  /// ids rising): a scan of the graph per question made the pass quadratic
  /// in the micro-batches, each adding a contribution to every weight.
  int usersOf(const Node *n) {
    useCount_.resize(g_.idBound(), 0);
    const auto &nodes = g_.nodes();
    size_t first = nodes.size();
    while (first > 0 && size_t(nodes[first - 1]->id) >= counted_) --first;
    for (size_t i = first; i < nodes.size(); ++i) countUses(*nodes[i], +1);
    counted_ = g_.idBound();
    return useCount_[size_t(n->id)];
  }
  void countUses(const Node &user, int delta) {
    const auto &in = user.inputs;
    for (size_t i = 0; i < in.size(); ++i)
      if (std::find(in.begin(), in.begin() + long(i), in[i]) == in.begin() + long(i))
        useCount_[size_t(in[i]->id)] += delta;
  }

  void eraseDeadGradientNodes() {
    std::vector<char> live(g_.idBound(), 0);
    std::vector<const Node *> work;
    for (const auto &[param, grad] : g_.gradients)
      if (const Node *n = g_.find(grad)) work.push_back(n);
    while (!work.empty()) {
      const Node *n = work.back();
      work.pop_back();
      if (live[size_t(n->id)]) continue;
      live[size_t(n->id)] = 1;
      for (const Node *in : n->inputs) work.push_back(in);
    }
    // Dead nodes are used only by dead nodes: they go all at once.
    std::unordered_set<const Node *> dead;
    for (const auto &n : g_.nodes())
      if (n->id >= firstNewId_ && !live[size_t(n->id)]) dead.insert(n.get());
    g_.eraseAll(dead);
    ctx_.count("autodiff", "backward-nodes",
               int64_t(std::count_if(g_.nodes().begin(), g_.nodes().end(),
                                     [&](const auto &n) { return n->id >= firstNewId_; })));
  }

  Graph &g_;
  PassContext &ctx_;
  int firstNewId_ = 0;
  std::vector<int> useCount_; ///< usersOf, by id
  size_t counted_ = 0;        ///< the nodes with ids below this are in useCount_
  std::unordered_set<const Node *> fusedAway_; ///< accumulate's parts, unused now
  /// By id of a forward value: (id of the consumer, its gradient
  /// contribution).
  std::vector<std::vector<std::pair<int, Node *>>> contributions_;
  /// By id (of nodes this pass made, so it grows with them): whether the
  /// node is a value's total gradient, which keeps its name.
  std::vector<char> claimed_;

  bool claimed(const Node *n) const {
    return size_t(n->id) < claimed_.size() && claimed_[size_t(n->id)];
  }
  void claim(const Node *n) {
    if (size_t(n->id) >= claimed_.size()) claimed_.resize(g_.idBound(), 0);
    claimed_[size_t(n->id)] = 1;
  }
};

class AutodiffPass : public Pass {
public:
  bool run(Graph &g, PassContext &ctx) override {
    if (g.has(ir::kDifferentiated)) return false;
    Autodiff(g, ctx).run();
    g.stages |= ir::kDifferentiated;
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createAutodiffPass() { return std::make_unique<AutodiffPass>(); }

} // namespace mpc::passes
