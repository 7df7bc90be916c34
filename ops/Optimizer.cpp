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

TensorType inferSgd(TypeOps ops, const AttrMap &attrs) {
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

TensorType inferAdam(TypeOps ops, const AttrMap &) {
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
                            {"param", "grad", "momentum_buf", "step"});
    r.minArity = 2;
    r.attrs = {attr("lr", AttrType::Float, std::nullopt, "learning rate"),
               attr("momentum", AttrType::Float, 0.0,
                    "momentum factor; non-zero needs momentum_buf and step"),
               attr("dampening", AttrType::Float, 0.0, "dampening for momentum"),
               attr("weight_decay", AttrType::Float, 0.0, "L2 penalty added to the gradient"),
               attr("nesterov", AttrType::Bool, false, "use Nesterov momentum")};
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
                            {"param", "grad", "m", "v", "step"});
    r.attrs = {attr("lr", AttrType::Float, std::nullopt, "learning rate"),
               attr("beta1", AttrType::Float, 0.9, "decay of the first moment"),
               attr("beta2", AttrType::Float, 0.999, "decay of the second moment"),
               attr("eps", AttrType::Float, 1e-8, "added to the denominator"),
               attr("weight_decay", AttrType::Float, 0.0, "weight decay factor"),
               attr("decoupled", AttrType::Bool, false,
                    "decoupled weight decay (AdamW) instead of L2 on the gradient (Adam)")};
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
}

} // namespace mpc::ops
