//===- passes/OptimizeStep.cpp - optimizer state and parameter updates --===//
//
// Invariant established (kOptimized): every parameter with a gradient has an
// update op `<param>.update` (sgd_update or adam_update) on its own device,
// fed by the parameter, its gradient and its optimizer state; the state
// tensors are persistent, zero-initialised values on the same device, named
// `<param>.<optimizer>.<slot>` (w0.adam.m, w0.adam.v, w0.adam.step,
// w0.sgd.momentum, w0.sgd.step). The update writes the parameter and its
// state in place; its result is the new parameter value and is no output.
//
// Algorithm:
//   1. No loss: nothing to train, the pass does nothing. Already optimized:
//      nothing to do.
//   2. The optimizer is the model's `optimizer`, else SGD with lr 0.01;
//      --optimizer replaces its kind (keeping lr and weight decay) and --lr
//      its learning rate. The result is recorded as the graph's optimizer.
//   3. For each parameter, in model order, that has a gradient: create its
//      state (SGD needs state only with momentum) and its update op, with the
//      optimizer's hyper-parameters as attributes (adamw: adam_update with
//      decoupled=true). The formulas are torch.optim's (docs/passes.md).
//      A param's lr_mult and wd_mult (MXNet's per-parameter multipliers)
//      scale the update's lr and weight_decay attributes, so the kernels stay
//      as they are; lr_mult 0 makes every update p - 0 * g = p, bit for bit.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <map>

namespace mpc::passes {

using ir::Graph;
using ir::Node;

namespace {

ir::OptimizerSpec effectiveOptimizer(const Graph &g, const PassOptions &opts) {
  ir::OptimizerSpec spec = g.optimizer.value_or(ir::OptimizerSpec{});
  if (opts.optimizer && *opts.optimizer != spec.kind) {
    ir::OptimizerSpec fresh;
    fresh.kind = *opts.optimizer;
    fresh.lr = spec.lr;
    fresh.weightDecay = spec.weightDecay;
    spec = fresh;
  }
  if (opts.lr) spec.lr = *opts.lr;
  if (spec.kind != "sgd" && spec.kind != "adam" && spec.kind != "adamw")
    throw UserError(g.sourceFile, "/optimizer",
                    "unknown optimizer '" + spec.kind + "' (expected sgd, adam or adamw)");
  return spec;
}

class OptimizeStepPass : public Pass {
public:

  bool run(Graph &g, PassContext &ctx) override {
    if (g.loss.empty() || g.has(ir::kOptimized)) return false;
    ir::OptimizerSpec opt = effectiveOptimizer(g, ctx.options);
    // The graph records what it is trained with (flags applied, defaults
    // filled in): the plan's optimizer description is taken from here.
    g.optimizer = opt;

    std::vector<Node *> params;
    for (const auto &n : g.nodes())
      if (n->kind == ir::NodeKind::Param && g.gradients.count(n->name)) params.push_back(n.get());

    // A data-parallel replica's state mirrors its parameter's original's
    // (Node::mirrorOf): (param, slot) -> state, filled in creation order,
    // in which an original comes before its mirrors.
    std::map<std::pair<std::string, std::string>, const Node *> states;
    for (Node *p : params) {
      Node *grad = g.find(g.gradients.at(p->name));
      MPC_ASSERT(grad, "gradient '" + g.gradients.at(p->name) + "' of '" + p->name +
                           "' is not in the graph");
      auto state = [&](const std::string &slot, ir::TensorType type) {
        Node *s = g.addState(g.uniqueName(p->name + "." + opt.kind + "." + slot), type,
                             ir::InitSpec{ir::InitSpec::Zeros}, p->name);
        s->device = p->device;
        states[{p->name, slot}] = s;
        if (!p->mirrorOf.empty()) {
          auto original = states.find({p->mirrorOf, slot});
          MPC_ASSERT(original != states.end(),
                     "mirror '" + p->name + "' before its parameter '" + p->mirrorOf + "'");
          s->mirrorOf = original->second->name;
        }
        ctx.count("optimize-step", "state-tensors");
        return s;
      };
      ir::TensorType step{ir::DType::F32, {1}};
      ir::Builder b(g);
      b.device = p->device;
      b.origin = p->name;
      double lr = opt.lr * p->lrMult, wd = opt.weightDecay * p->wdMult;
      if (opt.kind == "sgd") {
        std::vector<Node *> operands{p, grad};
        if (opt.momentum != 0.0) {
          operands.push_back(state("momentum", p->type));
          operands.push_back(state("step", step));
        }
        b.create(ir::OpKind::SgdUpdate, operands,
                 {{"lr", lr},
                  {"momentum", opt.momentum},
                  {"dampening", opt.dampening},
                  {"weight_decay", wd},
                  {"nesterov", opt.nesterov}},
                 p->name + ".update");
      } else {
        Node *m = state("m", p->type);
        Node *v = state("v", p->type);
        Node *t = state("step", step);
        b.create(ir::OpKind::AdamUpdate, {p, grad, m, v, t},
                 {{"lr", lr},
                  {"beta1", opt.beta1},
                  {"beta2", opt.beta2},
                  {"eps", opt.eps},
                  {"weight_decay", wd},
                  {"decoupled", opt.kind == "adamw"}},
                 p->name + ".update");
      }
      ctx.count("optimize-step", "updates");
    }
    g.stages |= ir::kOptimized;
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createOptimizeStepPass() { return std::make_unique<OptimizeStepPass>(); }

} // namespace mpc::passes
