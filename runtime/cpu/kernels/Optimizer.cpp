//===- runtime/cpu/kernels/Optimizer.cpp - sgd_update, adam_update, assign ===//
//
// In-place parameter updates with torch.optim semantics, exactly as the op
// records define them (ir/ops/Optimizer.cpp): SGD with momentum, dampening,
// weight decay and Nesterov (the first step, step == 0, seeds the momentum
// buffer with the gradient); Adam and AdamW (decoupled) with bias
// correction. The step counter is an f32[1] state tensor. Per-element
// arithmetic runs in double and rounds once into the f32 state. The result
// buffer receives the new parameter (skipped when it aliases the parameter).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include <cmath>
#include <cstring>

namespace mpc::runtime::cpu {

namespace {

void finish(const KernelInstance &k) {
  if (k.out.data != k.in[0].data)
    std::memmove(k.out.data, k.in[0].data, size_t(k.out.numel) * 4);
}

/// A guarded update (fp16 loss scaling) whose skip flag, its last operand,
/// is set: nothing changes. `ints[0]` is 1 for a guarded update.
bool skipped(const KernelInstance &k) {
  if (k.ints.empty() || k.ints[0] == 0 || k.in.back().f()[0] == 0.0f) return false;
  finish(k);
  return true;
}

/// The operands an update reads, without a guarded update's skip flag.
size_t bodyOperands(const KernelInstance &k) {
  return k.in.size() - (!k.ints.empty() && k.ints[0] != 0 ? 1 : 0);
}

// reals: lr, momentum, dampening, weight_decay, nesterov (0/1).
struct SgdHyper {
  double lr, momentum, dampening, wd;
  bool nesterov;
};

// A non-zero momentum comes with momentum_buf and step: proven by the plan verifier.
void prepareSgd(KernelInstance &k) {
  double momentum = attrFloat(k.attrMap(), "momentum");
  k.reals = {attrFloat(k.attrMap(), "lr"), momentum, attrFloat(k.attrMap(), "dampening"),
             attrFloat(k.attrMap(), "weight_decay"),
             attrBool(k.attrMap(), "nesterov") ? 1.0 : 0.0};
  k.ints = {attrBool(k.attrMap(), "guarded") ? 1 : 0};
}

void runSgd(const KernelInstance &k) {
  if (skipped(k)) return;
  const std::vector<double> &h = k.reals;
  double lr = h[0], momentum = h[1], dampening = h[2], wd = h[3];
  bool nesterov = h[4] != 0.0;
  float *p = k.in[0].f();
  const float *grad = k.in[1].f();
  bool hasState = bodyOperands(k) == 4;
  float *buf = hasState ? k.in[2].f() : nullptr;
  float *step = hasState ? k.in[3].f() : nullptr;
  bool first = hasState && step[0] == 0.0f;
  int64_t n = k.in[0].numel;
  for (int64_t i = 0; i < n; ++i) {
    double g = double(grad[i]) + wd * double(p[i]);
    if (momentum != 0.0) {
      double b = first ? g : momentum * double(buf[i]) + (1.0 - dampening) * g;
      buf[i] = float(b);
      g = nesterov ? g + momentum * double(buf[i]) : double(buf[i]);
    }
    p[i] = float(double(p[i]) - lr * g);
  }
  if (hasState) step[0] += 1.0f;
  finish(k);
}

// reals: lr, beta1, beta2, eps, weight_decay, decoupled (0/1).
void prepareAdam(KernelInstance &k) {
  k.reals = {attrFloat(k.attrMap(), "lr"),
             attrFloat(k.attrMap(), "beta1"),
             attrFloat(k.attrMap(), "beta2"),
             attrFloat(k.attrMap(), "eps"),
             attrFloat(k.attrMap(), "weight_decay"),
             attrBool(k.attrMap(), "decoupled") ? 1.0 : 0.0};
  k.ints = {attrBool(k.attrMap(), "guarded") ? 1 : 0};
}

void runAdam(const KernelInstance &k) {
  if (skipped(k)) return;
  const std::vector<double> &h = k.reals;
  double lr = h[0], b1 = h[1], b2 = h[2], eps = h[3], wd = h[4];
  bool decoupled = h[5] != 0.0;
  float *p = k.in[0].f(), *m = k.in[2].f(), *v = k.in[3].f(), *step = k.in[4].f();
  const float *grad = k.in[1].f();
  step[0] += 1.0f;
  double t = step[0];
  double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
  double stepSize = lr / bc1, bc2Sqrt = std::sqrt(bc2);
  int64_t n = k.in[0].numel;
  for (int64_t i = 0; i < n; ++i) {
    double g = grad[i], pi = p[i];
    if (decoupled) pi *= 1.0 - lr * wd;
    else g += wd * pi;
    double mi = b1 * double(m[i]) + (1.0 - b1) * g;
    double vi = b2 * double(v[i]) + (1.0 - b2) * g * g;
    m[i] = float(mi);
    v[i] = float(vi);
    p[i] = float(pi - stepSize * mi / (std::sqrt(vi) / bc2Sqrt + eps));
  }
  finish(k);
}

// assign: the value into the target; the result is the target's bytes.
void prepareAssign(KernelInstance &) {}

void runAssign(const KernelInstance &k) {
  if (k.in[0].data != k.in[1].data)
    std::memmove(k.in[0].data, k.in[1].data, size_t(k.in[0].numel) * 4);
  finish(k);
}

// count_nonfinite: over every operand, in order.
void runCountNonfinite(const KernelInstance &k) {
  int64_t n = 0;
  for (const TensorArg &t : k.in)
    for (int64_t i = 0; i < t.numel; ++i) n += std::isfinite(t.f()[i]) ? 0 : 1;
  k.out.f()[0] = float(n);
}

// loss_scale_update: reals = growth_interval, growth_factor, backoff_factor.
void prepareLossScaleUpdate(KernelInstance &k) {
  k.reals = {double(attrInt(k.attrMap(), "growth_interval")),
             attrFloat(k.attrMap(), "growth_factor"), attrFloat(k.attrMap(), "backoff_factor")};
}

void runLossScaleUpdate(const KernelInstance &k) {
  float &scale = k.in[0].f()[0], &good = k.in[1].f()[0], &skips = k.in[2].f()[0];
  if (k.in[3].f()[0] != 0.0f) {
    scale = float(double(scale) * k.reals[2]);
    good = 0;
    skips += 1;
  } else if ((good += 1) >= float(k.reals[0])) {
    scale = float(double(scale) * k.reals[1]);
    good = 0;
  }
  k.out.f()[0] = scale;
}

} // namespace

namespace kernels::Optimizer {
const CpuKernel CountNonfinite{nullptr, runCountNonfinite};
const CpuKernel LossScaleUpdate{prepareLossScaleUpdate, runLossScaleUpdate};
const CpuKernel SgdUpdate{prepareSgd, runSgd};
const CpuKernel AdamUpdate{prepareAdam, runAdam};
const CpuKernel Assign{prepareAssign, runAssign};
} // namespace kernels::Optimizer

} // namespace mpc::runtime::cpu
