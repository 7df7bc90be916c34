//===- runtime/cuda/kernels/Pool.cpp - max, average and global pooling -----===//
//
// The host side of the pools: the window geometry from the attributes and
// shapes (runtime/Windows.h, shared with the CPU), onto the launchers of
// Pool.cu.
//
//===----------------------------------------------------------------------===//
#include "runtime/Windows.h"
#include "runtime/cuda/kernels/Prepare.h"

namespace mpc::runtime::cuda {

namespace {

/// The pool of x -> y (shapes of the forward op) as a descriptor.
PoolDesc descOf(const KernelOperands &k, const std::vector<int64_t> &x,
                const std::vector<int64_t> &y) {
  for (const plan::Buffer *b : k.inputs) requireF32(b);
  requireF32(k.output);
  PoolDims d = poolDims(k.instr->attrs, x, y);
  return {d.n * d.c, d.h, d.w, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.oh, d.ow, d.countPad};
}

Launch prepareMaxPool(const KernelOperands &k) {
  requireArity(k, 1, 1);
  PoolDesc d = descOf(k, k.inputs[0]->shape, k.output->shape);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchMaxPool2d(x, y, d, s); };
}

Launch prepareAvgPool(const KernelOperands &k) {
  requireArity(k, 1, 1);
  PoolDesc d = descOf(k, k.inputs[0]->shape, k.output->shape);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchAvgPool2d(x, y, d, s); };
}

Launch prepareMaxPoolGrad(const KernelOperands &k) {
  requireArity(k, 2, 2);
  PoolDesc d = descOf(k, k.inputs[0]->shape, k.inputs[1]->shape);
  if (k.inputs[0]->shape != k.output->shape)
    throw RuleError("buffers '" + k.inputs[0]->name + "' and '" + k.output->name +
                    "' differ in shape");
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchMaxPool2dGrad(x, dy, dx, d, s); };
}

Launch prepareAvgPoolGrad(const KernelOperands &k) {
  requireArity(k, 1, 1);
  PoolDesc d = descOf(k, k.output->shape, k.inputs[0]->shape);
  std::vector<int64_t> size = attrInts(k.instr->attrs, "input_size");
  if (size != std::vector<int64_t>{d.h, d.w})
    throw RuleError("avg_pool2d_grad input_size differs from its result buffer '" + k.output->name +
                    "'");
  const float *dy = cf(k.inPtr[0]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchAvgPool2dGrad(dy, dx, d, s); };
}

Launch prepareGlobalAvgPool(const KernelOperands &k) {
  requireArity(k, 1, 1);
  const plan::Buffer *x = k.inputs[0];
  requireF32(x);
  requireF32(k.output);
  if (x->shape.size() != 4 || x->shape[2] < 1 || x->shape[3] < 1 ||
      k.output->shape != std::vector<int64_t>{x->shape[0], x->shape[1], 1, 1})
    throw RuleError("global_avg_pool2d buffers '" + x->name + "' and '" + k.output->name +
                    "' do not have shapes [N,C,H,W] and [N,C,1,1]");
  const int64_t planes = x->shape[0] * x->shape[1], plane = x->shape[2] * x->shape[3];
  const float *xp = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGlobalAvgPool2d(xp, y, planes, plane, s); };
}

} // namespace

namespace kernels::Pool {
const CudaKernel MaxPool2d{nullptr, prepareMaxPool};
const CudaKernel MaxPool2dGrad{nullptr, prepareMaxPoolGrad};
const CudaKernel AvgPool2d{nullptr, prepareAvgPool};
const CudaKernel AvgPool2dGrad{nullptr, prepareAvgPoolGrad};
const CudaKernel GlobalAvgPool2d{nullptr, prepareGlobalAvgPool};
} // namespace kernels::Pool

} // namespace mpc::runtime::cuda
