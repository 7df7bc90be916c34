//===- runtime/cuda/kernels/Softmax.cpp - softmax along an axis -------------===//
//
// The tensor seen as [outer, size, inner] around the axis, onto the
// launchers of Softmax.cu.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"


namespace mpc::runtime::cuda {

namespace {

Split splitAxis(const KernelOperands &k) {
  const std::vector<int64_t> &shape = k.inputs[0]->shape;
  if (shape.empty()) throw RuleError("softmax needs rank >= 1");
  return splitAt(shape, normAxis(attrInt(k.instr->attrs, "axis", -1), shape.size()));
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

} // namespace

namespace kernels::Softmax {
const CudaKernel Softmax{nullptr, prepareSoftmax<SoftmaxKind::Softmax>};
const CudaKernel LogSoftmax{nullptr, prepareSoftmax<SoftmaxKind::LogSoftmax>};
const CudaKernel SoftmaxGrad{nullptr, prepareSoftmaxGrad};
} // namespace kernels::Softmax

} // namespace mpc::runtime::cuda
