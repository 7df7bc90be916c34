//===- runtime/cuda/kernels/Softmax.cpp - softmax along an axis, causal_mask ===//
//
// The tensor seen as [outer, size, inner] around the axis, onto the
// launchers of Softmax.cu; causal_mask as [matrices, rows, columns].
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"


namespace mpc::runtime::cuda {

namespace {

Split splitAxis(const KernelOperands &k) {
  const std::vector<int64_t> &shape = k.inputs[0]->shape;
  if (shape.empty()) throw RuleError("softmax needs rank >= 1");
  return splitAt(shape, normAxis(attrInt(k.instr->attrs, "axis"), shape.size()));
}

template <SoftmaxKind Kind> Launch prepareSoftmax(const KernelOperands &k) {
  requireArity(k, 1, 1);
  requireF32(k.inputs[0]);
  requireSameCount(k.inputs[0], k.output);
  Split sp = splitAxis(k);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchSoftmax(Kind, x, y, sp.outer, sp.size, sp.inner, s); };
}

Launch prepareSoftmaxGrad(const KernelOperands &k) {
  requireArity(k, 2, 2);
  requireSameCount(k.inputs[0], k.inputs[1]);
  requireSameCount(k.inputs[0], k.output);
  Split sp = splitAxis(k);
  const float *y = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchSoftmaxGrad(y, dy, dx, sp.outer, sp.size, sp.inner, s); };
}

/// y = x with y[..., i, j] = value where j > i (the last two axes: rows i,
/// columns j). Its gradient is causal_mask(dy) with value 0, so this serves
/// both; the plan may give y x's memory.
Launch prepareCausalMask(const KernelOperands &k) {
  requireArity(k, 1, 1);
  const plan::Buffer *x = k.inputs[0];
  requireF32(x);
  requireF32(k.output);
  if (x->shape.size() < 2) throw RuleError("causal_mask needs rank >= 2");
  if (k.output->shape != x->shape) throw RuleError("result shape does not match x");
  int64_t rows = x->shape[x->shape.size() - 2], cols = x->shape.back();
  int64_t mats = rows * cols == 0 ? 0 : x->numElements() / (rows * cols);
  float value = float(attrFloat(k.instr->attrs, "value"));
  const float *in = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchCausalMask(in, y, mats, rows, cols, value, s); };
}

} // namespace

namespace kernels::Softmax {
const CudaKernel Softmax{nullptr, prepareSoftmax<SoftmaxKind::Softmax>};
const CudaKernel LogSoftmax{nullptr, prepareSoftmax<SoftmaxKind::LogSoftmax>};
const CudaKernel SoftmaxGrad{nullptr, prepareSoftmaxGrad};
const CudaKernel CausalMask{nullptr, prepareCausalMask};
} // namespace kernels::Softmax

} // namespace mpc::runtime::cuda
