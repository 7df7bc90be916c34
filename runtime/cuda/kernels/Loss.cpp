//===- runtime/cuda/kernels/Loss.cpp - losses and their gradients -----------===//
//
// Full reductions through two fixed stages (Loss.cu); a label out of range
// sets the device's error flag, which the runtime reads after the step.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"


namespace mpc::runtime::cuda {

namespace {

int64_t mseScratch(const KernelOperands &k) {
  return allReduceScratchFloats(k.inputs[0]->numElements());
}

Launch prepareMse(const KernelOperands &k) {
  requireArity(k, 2, 2);
  requireSameCount(k.inputs[0], k.inputs[1]);
  int64_t n = k.inputs[0]->numElements();
  float scale = float(1.0 / double(n));
  const float *p = cf(k.inPtr[0]), *t = cf(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] { launchReduceAll(p, t, y, n, scale, ctx.scratch, ctx.stream); };
}

void checkLogits(const KernelOperands &k) {
  const plan::Buffer *logits = k.inputs[0], *labels = k.inputs[1];
  if (logits->shape.size() != 2 || labels->shape.size() != 1 ||
      labels->shape[0] != logits->shape[0] || labels->dtype != plan::DType::I32)
    throw RuleError("expected logits f32[N,C] and labels i32[N]");
}

int64_t crossEntropyScratch(const KernelOperands &k) {
  return crossEntropyScratchFloats(k.inputs[0]->shape.empty() ? 0 : k.inputs[0]->shape[0]);
}

Launch prepareCrossEntropy(const KernelOperands &k) {
  requireArity(k, 2, 2);
  checkLogits(k);
  int64_t rows = k.inputs[0]->shape[0], classes = k.inputs[0]->shape[1];
  const float *logits = cf(k.inPtr[0]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropy(logits, labels, y, rows, classes, ctx.scratch, ctx.errorFlag,
                              ctx.stream);
  };
}

Launch prepareCrossEntropyGrad(const KernelOperands &k) {
  requireArity(k, 3, 3);
  checkLogits(k);
  requireSameCount(k.inputs[0], k.output);
  int64_t rows = k.inputs[0]->shape[0], classes = k.inputs[0]->shape[1];
  const float *logits = cf(k.inPtr[0]), *dy = cf(k.inPtr[2]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *dx = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropyGrad(logits, labels, dy, dx, rows, classes, ctx.errorFlag,
                                  ctx.stream);
  };
}

} // namespace

namespace kernels::Loss {
const CudaKernel MseLoss{mseScratch, prepareMse};
const CudaKernel SoftmaxCrossEntropy{crossEntropyScratch, prepareCrossEntropy};
const CudaKernel SoftmaxCrossEntropyGrad{nullptr, prepareCrossEntropyGrad};
} // namespace kernels::Loss

} // namespace mpc::runtime::cuda
