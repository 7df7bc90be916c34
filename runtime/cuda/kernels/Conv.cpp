//===- runtime/cuda/kernels/Conv.cpp - conv2d through im2col and cuBLAS -----===//
//
// The same algorithm as the CPU (runtime/cpu/kernels/Conv.cpp), so the two
// runtimes differ only by the summation order inside the GEMMs: per image,
// the columns go to the instruction's scratch (im2col, Conv.cu), then one
// strided-batched sgemm covers the groups (batch = groups, each operand
// stepping by one group's block). The input gradient is the transposed
// product into the columns, folded back by col2im; the weight gradient
// accumulates the images in order (beta = 1 from the second image).
// Row-major products go to cuBLAS through the usual swap: C = op(A) op(B)
// is the column-major C^T = op(B)^T op(A)^T.
//
//===----------------------------------------------------------------------===//
#include "runtime/Windows.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/kernels/Prepare.h"

#include <climits>

namespace mpc::runtime::cuda {

namespace {

ConvDesc descOf(const ConvDims &d) {
  return {d.c, d.h, d.w, d.kh, d.kw, d.oh, d.ow, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw};
}

/// The geometry of an instruction: x, w and y are the forward conv2d's
/// shapes, found among the buffers as each op holds them.
ConvDims dimsOf(const KernelOperands &k) {
  for (const plan::Buffer *b : k.inputs) requireF32(b);
  requireF32(k.output);
  const std::string &op = k.instr->op;
  const plan::AttrMap &a = k.instr->attrs;
  ConvDims d;
  if (op == "conv2d")
    d = convDims(a, k.inputs[0]->shape, k.inputs[1]->shape, k.output->shape);
  else if (op == "conv2d_grad_input")
    d = convDims(a, k.output->shape, k.inputs[1]->shape, k.inputs[0]->shape);
  else
    d = convDims(a, k.inputs[0]->shape, k.output->shape, k.inputs[1]->shape);
  for (int64_t v : {d.kk() * d.groups, d.ohw(), d.o, d.groups})
    if (v > INT_MAX) throw RuleError("conv2d dimension exceeds cuBLAS's int range");
  return d;
}

/// The columns of one image, all groups.
int64_t columnFloats(const KernelOperands &k) {
  requireArity(k, 2, 3);
  ConvDims d = dimsOf(k);
  return d.kk() * d.groups * d.ohw();
}

/// The per-group geometry as cuBLAS ints.
struct Gemm {
  int og, kk, ohw, groups;
  long long wStride, colStride, yStride; ///< one group's block in w (dw), cols, y (dy)
};
Gemm gemmOf(const ConvDims &d) {
  return {int(d.og()),
          int(d.kk()),
          int(d.ohw()),
          int(d.groups),
          static_cast<long long>(d.og() * d.kk()),
          static_cast<long long>(d.kk() * d.ohw()),
          static_cast<long long>(d.og() * d.ohw())};
}

Launch prepareConv2d(const KernelOperands &k) {
  requireArity(k, 2, 3);
  const ConvDims d = dimsOf(k);
  const bool bias = k.inputs.size() == 3;
  if (bias && k.inputs[2]->shape != std::vector<int64_t>{d.o})
    throw RuleError("buffer '" + k.inputs[2]->name + "' must be f32[" + std::to_string(d.o) +
                    "] (the bias)");
  const ConvDesc desc = descOf(d);
  const Gemm g = gemmOf(d);
  const float *x = cf(k.inPtr[0]), *w = cf(k.inPtr[1]), *b = bias ? cf(k.inPtr[2]) : nullptr;
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    const float one = 1.f, zero = 0.f;
    for (int64_t n = 0; n < d.n; ++n) {
      launchIm2col(x + n * d.c * d.h * d.w, ctx.scratch, desc, ctx.stream);
      // y_g [og, ohw] = w_g [og, kk] cols_g [kk, ohw]
      cublasCheck(cublasSgemmStridedBatched(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, g.ohw, g.og, g.kk,
                                            &one, ctx.scratch, g.ohw, g.colStride, w, g.kk,
                                            g.wStride, &zero, y + n * d.o * d.ohw(), g.ohw,
                                            g.yStride, g.groups),
                  "cublasSgemmStridedBatched");
    }
    if (bias) launchAddChannelBias(y, b, d.n, d.o, d.ohw(), ctx.stream);
  };
}

Launch prepareGradInput(const KernelOperands &k) {
  requireArity(k, 2, 2);
  const ConvDims d = dimsOf(k);
  const ConvDesc desc = descOf(d);
  const Gemm g = gemmOf(d);
  const float *dy = cf(k.inPtr[0]), *w = cf(k.inPtr[1]);
  float *dx = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    const float one = 1.f, zero = 0.f;
    for (int64_t n = 0; n < d.n; ++n) {
      // cols_g [kk, ohw] = w_g^T [kk, og] dy_g [og, ohw]
      cublasCheck(cublasSgemmStridedBatched(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_T, g.ohw, g.kk, g.og,
                                            &one, dy + n * d.o * d.ohw(), g.ohw, g.yStride, w, g.kk,
                                            g.wStride, &zero, ctx.scratch, g.ohw, g.colStride,
                                            g.groups),
                  "cublasSgemmStridedBatched");
      launchCol2im(ctx.scratch, dx + n * d.c * d.h * d.w, desc, ctx.stream);
    }
  };
}

Launch prepareGradWeight(const KernelOperands &k) {
  requireArity(k, 2, 2);
  const ConvDims d = dimsOf(k);
  const ConvDesc desc = descOf(d);
  const Gemm g = gemmOf(d);
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dw = f(k.outPtr);
  const int64_t count = d.o * d.kk();
  KernelContext ctx = k.ctx;
  return [=] {
    if (d.n == 0) launchFill(dw, count, 0.f, ctx.stream);
    const float one = 1.f, zero = 0.f;
    for (int64_t n = 0; n < d.n; ++n) {
      launchIm2col(x + n * d.c * d.h * d.w, ctx.scratch, desc, ctx.stream);
      // dw_g [og, kk] (+)= dy_g [og, ohw] cols_g^T [ohw, kk]
      cublasCheck(cublasSgemmStridedBatched(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, g.kk, g.og, g.ohw,
                                            &one, ctx.scratch, g.ohw, g.colStride,
                                            dy + n * d.o * d.ohw(), g.ohw, g.yStride,
                                            n == 0 ? &zero : &one, dw, g.kk, g.wStride, g.groups),
                  "cublasSgemmStridedBatched");
    }
  };
}

} // namespace

namespace kernels::Conv {
const CudaKernel Conv2d{columnFloats, prepareConv2d};
const CudaKernel Conv2dGradInput{columnFloats, prepareGradInput};
const CudaKernel Conv2dGradWeight{columnFloats, prepareGradWeight};
} // namespace kernels::Conv

} // namespace mpc::runtime::cuda
