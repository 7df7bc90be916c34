//===- passes/Recompute.cpp - activations recomputed in the backward -----===//
//
// Invariant established (--recompute=selective|full): a backward node reads a
// forward activation only where the level keeps it; every other activation
// it needs is recomputed by a copy of its forward node made inside the
// backward, so the forward value dies with its last forward reader.
//   full       keeps each stage's inputs: what comes from another device (a
//              copy), the model's inputs and the parameters; the rest of
//              every stage's forward is recomputed.
//   selective  recomputes only cheap, memory-heavy ops: elementwise ops,
//              softmax, dropout and layer_norm; never a matmul or a conv.
// A copy is the same op with the same attributes on the same operands (or
// their copies), so it computes the same bits; a dropout's copy draws the
// original's mask (its key: ir/ops/Random.cpp). A copy is a backward node
// whose origin is the forward node and whose micro-batch is its micro-batch,
// so the pipeline schedule runs it in that micro-batch's backward action on
// the same stage (codegen/PipelineSchedule.cpp), where it is needed.
//
// Algorithm:
//   1. In topological order, the activations: forward op nodes that depend on
//      a model input, except transfers (a stage's input) and updates. The
//      recomputable ones are all of them (full) or the cheap ones
//      (selective), by the level of their device (PassOptions::recomputeOn,
//      else --recompute).
//   2. Needed: every recomputable operand of a backward node (not an
//      update), and, transitively, every recomputable operand of a needed
//      node.
//   3. In topological order, a copy of each needed node, its operands
//      replaced by their copies where those are needed.
//   4. Every backward node reads the copies instead.
// Running it again finds nothing: no backward node reads a recomputable
// forward node any more.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/OpInfo.h"
#include "support/Error.h"

#include <unordered_map>
#include <unordered_set>

namespace mpc::passes {

namespace {

using ir::Node;

/// selective's ops: cheap to run again, and their results are as large as
/// their operands (or, for softmax over attention scores, larger than what
/// they are computed from).
bool cheap(const Node *n) {
  return n->info().has(ir::kElementwise) || n->isOp(ir::OpKind::Softmax) ||
         n->isOp(ir::OpKind::Dropout) || n->isOp(ir::OpKind::LayerNorm);
}

bool isUpdate(const Node *n) { return n->isOp() && n->info().has(ir::kOptimizer); }

void checkLevel(const ir::Graph &g, const std::string &level) {
  if (level != "none" && level != "selective" && level != "full")
    throw UserError(g.sourceFile, "--recompute",
                    "unknown level '" + level + "' (expected none, selective or full)");
}

class RecomputePass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    const std::string global = ctx.options.recompute.value_or("none");
    bool any = global != "none";
    checkLevel(g, global);
    for (const auto &[device, level] : ctx.options.recomputeOn) {
      checkLevel(g, level);
      any = any || level != "none";
    }
    if (!any || !g.has(ir::kDifferentiated)) return false;
    auto levelOf = [&](const Node *n) -> const std::string & {
      auto it = ctx.options.recomputeOn.find(n->device);
      return it == ctx.options.recomputeOn.end() ? global : it->second;
    };
    const std::vector<Node *> topo = g.topoOrder();
    // Step 1.
    std::unordered_set<const Node *> batched, recomputable;
    for (Node *n : topo) {
      if (n->kind == ir::NodeKind::Input) batched.insert(n);
      if (!n->isOp() || n->backward) continue;
      bool fromInput = false;
      for (const Node *in : n->inputs) fromInput = fromInput || batched.count(in);
      if (!fromInput) continue;
      batched.insert(n);
      if (n->isTransfer() || isUpdate(n) || n->info().has(ir::kCollective)) continue;
      const std::string &level = levelOf(n);
      if (level == "full" || (level == "selective" && cheap(n))) recomputable.insert(n);
    }
    // Step 2.
    std::unordered_set<const Node *> needed;
    std::vector<const Node *> work;
    for (Node *u : topo)
      if (u->isOp() && u->backward && !isUpdate(u))
        for (const Node *in : u->inputs)
          if (recomputable.count(in) && needed.insert(in).second) work.push_back(in);
    while (!work.empty()) {
      const Node *n = work.back();
      work.pop_back();
      for (const Node *in : n->inputs)
        if (recomputable.count(in) && needed.insert(in).second) work.push_back(in);
    }
    if (needed.empty()) return false;
    // Step 3.
    std::unordered_map<const Node *, Node *> copyOf;
    for (Node *f : topo) {
      if (!needed.count(f)) continue;
      std::vector<Node *> operands;
      for (Node *in : f->inputs) {
        auto it = copyOf.find(in);
        operands.push_back(it == copyOf.end() ? in : it->second);
      }
      ir::Builder b(g);
      b.device = f->device;
      b.backward = true;
      b.origin = f->name;
      ir::AttrMap attrs = f->attrs;
      if (f->info().drawsMask(f->attrs)) attrs["key"] = ir::dropoutKeyName(*f);
      Node *c = b.create(f->op, operands, attrs, f->name + ".recompute");
      c->microbatch = f->microbatch;
      copyOf[f] = c;
      ctx.count("recompute", "recomputed");
    }
    // Step 4.
    for (Node *u : topo)
      if (u->isOp() && u->backward && !isUpdate(u))
        for (Node *&in : u->inputs)
          if (auto it = copyOf.find(in); it != copyOf.end()) in = it->second;
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createRecomputePass() { return std::make_unique<RecomputePass>(); }

} // namespace mpc::passes
