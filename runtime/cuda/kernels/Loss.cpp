//===- runtime/cuda/kernels/Loss.cpp - losses and their gradients -----------===//
//
// Full reductions through two fixed stages (Loss.cu). Cross-entropy takes
// logits f32[..., C] as rows of C classes; rows labelled ignore_index are
// left out of the mean. A label out of range is reported to the device's
// DataError record, which the runtime reads when it next waits for the
// device.
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

/// logits f32[..., C] (rank >= 2, C >= 1) and labels i32[...], the logits'
/// shape without its last axis: rows = numel / C.
struct Logits {
  int64_t rows = 0, classes = 0, ignoreIndex = -100;
  bool sum = false; ///< reduction "sum" (else "mean")
};
Logits checkLogits(const KernelOperands &k) {
  const plan::Buffer *logits = k.inputs[0], *labels = k.inputs[1];
  requireF32(logits);
  const std::vector<int64_t> &ls = logits->shape;
  if (ls.size() < 2 || labels->dtype != plan::DType::I32 ||
      labels->shape != std::vector<int64_t>(ls.begin(), ls.end() - 1))
    throw RuleError("expected logits f32[..., C] and labels i32[...] (the logits' shape "
                    "without C)");
  Logits l;
  l.classes = ls.back();
  if (l.classes < 1) throw RuleError("cross-entropy needs at least one class");
  l.rows = logits->numElements() / l.classes;
  l.ignoreIndex = attrInt(k.instr->attrs, "ignore_index");
  std::string reduction = attrString(k.instr->attrs, "reduction");
  if (reduction != "mean" && reduction != "sum")
    throw RuleError("reduction must be \"mean\" or \"sum\", got \"" + reduction + "\"");
  l.sum = reduction == "sum";
  return l;
}

int64_t crossEntropyScratch(const KernelOperands &k) {
  requireArity(k, 2, 2);
  return crossEntropyScratchFloats(checkLogits(k).rows);
}
int64_t crossEntropyGradScratch(const KernelOperands &k) {
  requireArity(k, 3, 3);
  return crossEntropyGradScratchFloats(checkLogits(k).rows);
}

Launch prepareCrossEntropy(const KernelOperands &k) {
  requireArity(k, 2, 2);
  Logits l = checkLogits(k);
  requireF32(k.output);
  if (k.output->numElements() != 1) throw RuleError("the loss must be a scalar");
  const float *logits = cf(k.inPtr[0]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropy(logits, labels, y, l.rows, l.classes, l.ignoreIndex, l.sum,
                              ctx.scratch, ctx.dataError, ctx.stream);
  };
}

Launch prepareCrossEntropyGrad(const KernelOperands &k) {
  requireArity(k, 3, 3);
  Logits l = checkLogits(k);
  requireF32(k.inputs[2]);
  if (k.inputs[2]->numElements() != 1) throw RuleError("dy must be a scalar");
  requireF32(k.output);
  requireSameCount(k.inputs[0], k.output);
  const float *logits = cf(k.inPtr[0]), *dy = cf(k.inPtr[2]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *dx = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropyGrad(logits, labels, dy, dx, l.rows, l.classes, l.ignoreIndex, l.sum,
                                  ctx.scratch, ctx.dataError, ctx.stream);
  };
}

} // namespace

namespace kernels::Loss {
const CudaKernel MseLoss{mseScratch, prepareMse};
const CudaKernel SoftmaxCrossEntropy{crossEntropyScratch, prepareCrossEntropy};
const CudaKernel SoftmaxCrossEntropyGrad{crossEntropyGradScratch, prepareCrossEntropyGrad};
} // namespace kernels::Loss

} // namespace mpc::runtime::cuda
