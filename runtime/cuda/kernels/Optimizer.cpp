//===- runtime/cuda/kernels/Optimizer.cpp - parameter updates ---------------===//
//
// In-place SGD and Adam (Optimizer.cu), each element in float64.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/CudaCheck.h"

namespace mpc::runtime::cuda {

namespace {

/// Copies the updated parameter into the op's result when the plan gave the
/// result its own buffer.
void copyResult(const KernelOperands &k, cudaStream_t s) {
  if (k.outPtr != k.inPtr[0] && k.output->bytes)
    cudaCheck(cudaMemcpyAsync(k.outPtr, k.inPtr[0], k.output->bytes, cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync");
}

Launch prepareSgd(const KernelOperands &k) {
  requireArity(k, 2, 4);
  if (k.inputs.size() == 3) throw RuleError("sgd_update takes momentum_buf and step together");
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (i != 3) requireSameCount(k.inputs[0], k.inputs[i]);
  SgdHyper h;
  h.lr = attrFloat(k.instr->attrs, "lr");
  h.momentum = attrFloat(k.instr->attrs, "momentum");
  h.dampening = attrFloat(k.instr->attrs, "dampening");
  h.weightDecay = attrFloat(k.instr->attrs, "weight_decay");
  h.nesterov = attrBool(k.instr->attrs, "nesterov");
  if (h.momentum != 0.0 && k.inputs.size() != 4)
    throw RuleError("sgd_update with momentum needs momentum_buf and step");
  bool state = k.inputs.size() == 4;
  float *p = f(k.inPtr[0]), *buf = state ? f(k.inPtr[2]) : nullptr;
  float *step = state ? f(k.inPtr[3]) : nullptr;
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchSgdUpdate(p, g, buf, step, n, h, s);
    copyResult(copy, s);
  };
}

Launch prepareAdam(const KernelOperands &k) {
  requireArity(k, 5, 5);
  for (size_t i = 1; i < 4; ++i) requireSameCount(k.inputs[0], k.inputs[i]);
  if (k.inputs[4]->numElements() != 1) throw RuleError("adam_update step must be f32[1]");
  AdamHyper h;
  h.lr = attrFloat(k.instr->attrs, "lr");
  h.beta1 = attrFloat(k.instr->attrs, "beta1");
  h.beta2 = attrFloat(k.instr->attrs, "beta2");
  h.eps = attrFloat(k.instr->attrs, "eps");
  h.weightDecay = attrFloat(k.instr->attrs, "weight_decay");
  h.decoupled = attrBool(k.instr->attrs, "decoupled");
  float *p = f(k.inPtr[0]), *m = f(k.inPtr[2]), *v = f(k.inPtr[3]), *step = f(k.inPtr[4]);
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchAdamUpdate(p, g, m, v, step, n, h, s);
    copyResult(copy, s);
  };
}

} // namespace

namespace kernels::Optimizer {
const CudaKernel SgdUpdate{nullptr, prepareSgd};
const CudaKernel AdamUpdate{nullptr, prepareAdam};
} // namespace kernels::Optimizer

} // namespace mpc::runtime::cuda
