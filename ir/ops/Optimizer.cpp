//===- ir/ops/Optimizer.cpp - the optimizer updates' reference kernels ---===//
//
// The float64 reference kernels of sgd_update and adam_update, which update
// the parameter and optimizer state in place as torch.optim.SGD, Adam and
// AdamW do, and of assign; none is differentiable. The schemas are in
// ops/Optimizer.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <cmath>

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// A guarded update whose skip flag is set: everything stays as it is.
bool skipped(RefOps &o, const AttrMap &a, RefTensor &out) {
  if (!getBool(a, "guarded")) return false;
  bool skip = o.back()->data[0] != 0.0;
  o = o.first(o.size() - 1);
  if (skip) out.data = o[0]->data;
  return skip;
}

void refSgd(RefOps o, const AttrMap &a, RefTensor &out) {
  if (skipped(o, a, out)) return;
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

void refAdam(RefOps o, const AttrMap &a, RefTensor &out) {
  if (skipped(o, a, out)) return;
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

void refAssign(RefOps o, const AttrMap &, RefTensor &out) {
  o[0]->data = o[1]->data;
  out.data = o[0]->data;
}

void refCountNonfinite(RefOps o, const AttrMap &, RefTensor &out) {
  double n = 0;
  for (const RefTensor *t : o)
    for (double v : t->data) n += std::isfinite(v) ? 0.0 : 1.0;
  out.data = {n};
}

void refLossScaleUpdate(RefOps o, const AttrMap &a, RefTensor &out) {
  double &scale = o[0]->data[0], &good = o[1]->data[0], &skips = o[2]->data[0];
  if (o[3]->data[0] != 0.0) {
    scale *= getFloat(a, "backoff_factor");
    good = 0;
    skips += 1;
  } else if (++good >= double(getInt(a, "growth_interval"))) {
    scale *= getFloat(a, "growth_factor");
    good = 0;
  }
  out.data = {scale};
}

} // namespace

void addOptimizerRules(RuleTable &t) {
  t[size_t(OpKind::CountNonfinite)] = {nullptr, refCountNonfinite};
  t[size_t(OpKind::LossScaleUpdate)] = {nullptr, refLossScaleUpdate};
  t[size_t(OpKind::SgdUpdate)] = {nullptr, refSgd};
  t[size_t(OpKind::AdamUpdate)] = {nullptr, refAdam};
  t[size_t(OpKind::Assign)] = {nullptr, refAssign};
}

} // namespace mpc::ir
