//===- ops/Optimizer.cpp - sgd_update, adam_update and assign ------------===//
//
// Parameter updates with the exact semantics of torch.optim.SGD, Adam and
// AdamW (decoupled weight decay). They update their parameter and optimizer
// state in place (`mutatedOperands`) and also return the new parameter value.
// `assign` writes a value computed elsewhere into a parameter: ZeRO-1 updates
// a shard of each parameter and assigns the gathered whole
// (passes/ShardOptimizerState.cpp).
// The step counter is an f32[1] state tensor: it counts steps exactly up to
// 2^24, far beyond any run mpc is meant for.
//
// fp16's dynamic loss scaling (passes/LossScale.cpp, docs/precision.md):
// count_nonfinite counts the inf and NaN of a device's gradients, and an
// update with `guarded` set takes that count, summed over every device, as
// its last operand `skip`: non-zero leaves everything unchanged (the step
// is skipped, as torch.cuda.amp.GradScaler skips optimizer.step()).
// loss_scale_update then moves the scale as GradScaler.update() does.
//
// Their reference kernels are in ir/ops/Optimizer.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

namespace {

void requireLike(const TensorType &param, const TensorType &t, const char *op,
                 const char *operand) {
  requireDType(t, DType::F32, op, operand);
  if (t != param)
    throw RuleError(std::string(op) + " operand '" + operand +
                    "' must match the parameter: shape mismatch: " + pairStr(param, t));
}

void requireStep(const TensorType &t, const char *op) {
  if (t != TensorType{DType::F32, {1}})
    throw RuleError(std::string(op) + " operand 'step' must be f32[1], got " + t.str());
}

/// An update's operands without its `skip` flag, which a guarded update
/// takes last (an f32[1] count).
TypeOps unguarded(TypeOps ops, const AttrMap &attrs, const char *op, size_t least) {
  if (!getBool(attrs, "guarded")) return ops;
  if (ops.size() < least + 1)
    throw RuleError(std::string(op) + " with guarded=true takes the flag 'skip' last");
  if (ops.back() != TensorType{DType::F32, {1}})
    throw RuleError(std::string(op) + " operand 'skip' must be f32[1], got " + ops.back().str());
  return ops.first(ops.size() - 1);
}

AttrSpec guardedAttr() {
  return attr("guarded", AttrType::Bool, false,
              "the last operand, skip (f32[1]), leaves every operand unchanged when non-zero "
              "(fp16 loss scaling skips a step with inf or NaN gradients)");
}

TensorType inferSgd(TypeOps all, const AttrMap &attrs) {
  TypeOps ops = unguarded(all, attrs, "sgd_update", 2);
  if (ops.size() > 4) throw RuleError("sgd_update takes at most 4 operands besides 'skip'");
  requireDType(ops[0], DType::F32, "sgd_update", "param");
  requireLike(ops[0], ops[1], "sgd_update", "grad");
  if (ops.size() == 3)
    throw RuleError("sgd_update takes operands momentum_buf and step together, got only "
                    "momentum_buf");
  if (getFloat(attrs, "momentum") != 0.0 && ops.size() != 4)
    throw RuleError("sgd_update with momentum needs operands momentum_buf and step");
  if (ops.size() == 4) {
    requireLike(ops[0], ops[2], "sgd_update", "momentum_buf");
    requireStep(ops[3], "sgd_update");
  }
  return ops[0];
}

TensorType inferAdam(TypeOps all, const AttrMap &attrs) {
  TypeOps ops = unguarded(all, attrs, "adam_update", 5);
  if (ops.size() != 5)
    throw RuleError("adam_update takes param, grad, m, v and step (and skip when guarded)");
  requireDType(ops[0], DType::F32, "adam_update", "param");
  requireLike(ops[0], ops[1], "adam_update", "grad");
  requireLike(ops[0], ops[2], "adam_update", "m");
  requireLike(ops[0], ops[3], "adam_update", "v");
  requireStep(ops[4], "adam_update");
  return ops[0];
}

TensorType inferAssign(TypeOps ops, const AttrMap &) {
  if (ops[0] != ops[1])
    throw RuleError("assign needs a value of the target's type: " + pairStr(ops[0], ops[1]));
  return ops[0];
}

} // namespace

void addOptimizerSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::SgdUpdate, "sgd_update", "Optimizer",
                            "in-place SGD step on param (torch.optim.SGD); returns the new param",
                            {"param", "grad", "momentum_buf", "step", "skip"});
    r.minArity = 2;
    r.attrs = {attr("lr", AttrType::Float, std::nullopt, "learning rate"),
               attr("momentum", AttrType::Float, 0.0,
                    "momentum factor; non-zero needs momentum_buf and step"),
               attr("dampening", AttrType::Float, 0.0, "dampening for momentum"),
               attr("weight_decay", AttrType::Float, 0.0, "L2 penalty added to the gradient"),
               attr("nesterov", AttrType::Bool, false, "use Nesterov momentum"), guardedAttr()};
    r.infer = inferSgd;
    r.flops = flopsPerInput<4>;
    r.traits = kOptimizer;
    r.shard = updateRule;
    r.mutatedOperands = {0, 2, 3};
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::AdamUpdate, "adam_update", "Optimizer",
                            "in-place Adam/AdamW step on param with bias correction "
                            "(torch.optim.Adam, AdamW); returns the new param",
                            {"param", "grad", "m", "v", "step", "skip"});
    r.minArity = 5;
    r.attrs = {attr("lr", AttrType::Float, std::nullopt, "learning rate"),
               attr("beta1", AttrType::Float, 0.9, "decay of the first moment"),
               attr("beta2", AttrType::Float, 0.999, "decay of the second moment"),
               attr("eps", AttrType::Float, 1e-8, "added to the denominator"),
               attr("weight_decay", AttrType::Float, 0.0, "weight decay factor"),
               attr("decoupled", AttrType::Bool, false,
                    "decoupled weight decay (AdamW) instead of L2 on the gradient (Adam)"),
               guardedAttr()};
    r.infer = inferAdam;
    r.flops = flopsPerInput<12>;
    r.traits = kOptimizer;
    r.shard = updateRule;
    r.mutatedOperands = {0, 2, 3, 4};
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Assign, "assign", "Optimizer",
                            "writes value into target in place (a parameter's new value made "
                            "elsewhere); returns the new target",
                            {"target", "value"});
    r.infer = inferAssign;
    r.flops = noFlops;
    r.traits = kOptimizer;
    r.shard = updateRule;
    r.mutatedOperands = {0};
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::CountNonfinite, "count_nonfinite", "Optimizer",
                            "the number of inf and NaN elements in all operands, as f32[1] "
                            "(fp16 loss scaling: a device's gradients; not differentiable)",
                            {"x"});
    r.variadic = true;
    r.infer = [](TypeOps o, const AttrMap &) {
      for (size_t i = 0; i < o.size(); ++i)
        requireDType(o[i], DType::F32, "count_nonfinite", "x" + std::to_string(i));
      return TensorType{DType::F32, {1}};
    };
    // Counting is a sum over elements: over parts of split operands the
    // counts are a partial sum (P) of the whole's. Whole operands would be
    // counted by every member, so they are counted apart.
    r.shard = [](const ShardQuery &q) {
      bool allSplit = true;
      for (const Layout &l : q.layouts) allSplit = allSplit && l.split();
      if (!allSplit) return replicatedRule(q, "count_nonfinite counts parts of split operands");
      return ShardResult{{q.layouts.begin(), q.layouts.end()}, Layout::p(), {}, {}, {}};
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &) {
      double n = 0;
      for (const TensorType &t : o) n += elems(t);
      return n;
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(
        OpKind::LossScaleUpdate, "loss_scale_update", "Optimizer",
        "in-place dynamic loss scale (torch.cuda.amp.GradScaler.update): with found > 0, scale "
        "*= backoff_factor, good_steps = 0, skipped += 1; else good_steps += 1 and, at "
        "growth_interval, scale *= growth_factor and good_steps = 0; returns the new scale",
        {"scale", "good_steps", "skipped", "found"});
    r.attrs = {attr("growth_interval", AttrType::Int, int64_t(2000),
                    "clean steps after which the scale grows"),
               attr("growth_factor", AttrType::Float, 2.0, "the growth of the scale"),
               attr("backoff_factor", AttrType::Float, 0.5,
                    "the scale's factor after a step with inf or NaN gradients")};
    r.infer = [](TypeOps o, const AttrMap &a) {
      for (size_t i = 0; i < o.size(); ++i)
        if (o[i] != TensorType{DType::F32, {1}})
          throw RuleError(std::string("loss_scale_update operand '") +
                          (i == 0 ? "scale" : i == 1 ? "good_steps" : i == 2 ? "skipped" : "found") +
                          "' must be f32[1], got " + o[i].str());
      if (getInt(a, "growth_interval") < 1)
        throw RuleError("loss_scale_update growth_interval must be at least 1, got " +
                        std::to_string(getInt(a, "growth_interval")));
      return TensorType{DType::F32, {1}};
    };
    r.flops = noFlops;
    r.traits = kOptimizer;
    r.mutatedOperands = {0, 1, 2};
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
