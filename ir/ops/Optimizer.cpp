//===- ir/ops/Optimizer.cpp - sgd_update and adam_update ----------------===//
//
// Parameter updates with the exact semantics of torch.optim.SGD, Adam and
// AdamW (decoupled weight decay). They update their parameter and optimizer
// state in place (`mutatedOperands`) and also return the new parameter value.
// The step counter is an f32[1] state tensor: it counts steps exactly up to
// 2^24, far beyond any run mpc is meant for.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

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

void refSgd(RefOps o, const AttrMap &a, RefTensor &out) {
  RefTensor &p = *o[0];
  const RefTensor &grad = *o[1];
  double lr = getFloat(a, "lr"), momentum = getFloat(a, "momentum");
  double dampening = getFloat(a, "dampening"), wd = getFloat(a, "weight_decay");
  bool nesterov = getBool(a, "nesterov");
  bool hasState = o.size() == 4;
  bool first = hasState && o[3]->data[0] == 0.0;
  for (size_t i = 0; i < p.data.size(); ++i) {
    double g = grad.data[i] + wd * p.data[i];
    if (momentum != 0.0) {
      double &buf = o[2]->data[i];
      buf = first ? g : momentum * buf + (1.0 - dampening) * g;
      g = nesterov ? g + momentum * buf : buf;
    }
    p.data[i] -= lr * g;
  }
  if (hasState) o[3]->data[0] += 1.0;
  out.data = p.data;
}

TensorType inferAdam(TypeOps ops, const AttrMap &) {
  requireDType(ops[0], DType::F32, "adam_update", "param");
  requireLike(ops[0], ops[1], "adam_update", "grad");
  requireLike(ops[0], ops[2], "adam_update", "m");
  requireLike(ops[0], ops[3], "adam_update", "v");
  requireStep(ops[4], "adam_update");
  return ops[0];
}

void refAdam(RefOps o, const AttrMap &a, RefTensor &out) {
  RefTensor &p = *o[0], &m = *o[2], &v = *o[3], &step = *o[4];
  const RefTensor &grad = *o[1];
  double lr = getFloat(a, "lr"), b1 = getFloat(a, "beta1"), b2 = getFloat(a, "beta2");
  double eps = getFloat(a, "eps"), wd = getFloat(a, "weight_decay");
  bool decoupled = getBool(a, "decoupled");
  step.data[0] += 1.0;
  double t = step.data[0];
  double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  double stepSize = lr / bc1, bc2Sqrt = std::sqrt(bc2);
  for (size_t i = 0; i < p.data.size(); ++i) {
    double g = grad.data[i];
    if (decoupled) p.data[i] *= 1.0 - lr * wd;
    else g += wd * p.data[i];
    m.data[i] = b1 * m.data[i] + (1.0 - b1) * g;
    v.data[i] = b2 * v.data[i] + (1.0 - b2) * g * g;
    p.data[i] -= stepSize * m.data[i] / (std::sqrt(v.data[i]) / bc2Sqrt + eps);
  }
  out.data = p.data;
}

} // namespace

void addOptimizerOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::SgdUpdate, "sgd_update", "Optimizer",
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
    r.reference = refSgd;
    r.flops = flopsPerInput<4>;
    r.traits = kOptimizer;
    r.mutatedOperands = {0, 2, 3};
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::AdamUpdate, "adam_update", "Optimizer",
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
    r.reference = refAdam;
    r.flops = flopsPerInput<12>;
    r.traits = kOptimizer;
    r.mutatedOperands = {0, 2, 3, 4};
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
