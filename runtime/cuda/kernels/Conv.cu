//===- runtime/cuda/kernels/Conv.cu - conv2d through im2col and cuBLAS ----===//
//
// The same algorithm as the CPU (runtime/cpu/kernels/Conv.cpp), so the two
// runtimes differ only by the summation order inside the GEMMs: per image,
// the columns go to the instruction's scratch (im2col, one thread per column
// entry), then one strided-batched sgemm covers the groups (batch = groups,
// each operand stepping by one group's block). The input gradient is the
// transposed product into the columns, folded back by col2im (one thread per
// input element gathering the taps that read it, so no atomics and a fixed
// order); the weight gradient accumulates the images in order (beta = 1 from
// the second image). Row-major products go to cuBLAS through the usual swap:
// C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "ops/Window.h"
#include "runtime/cuda/CudaCheck.h"

#include <climits>

namespace mpc::runtime::cuda {

using ops::ConvGeom;

using namespace detail;

namespace {

/// Convolution of one image: input [c, h, w], a kh x kw kernel with stride,
/// padding and dilation, output oh x ow (ops/Window.h's ConvGeom).
struct ConvDesc {
  int64_t c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
};

// ---- device kernels and their launchers --------------------------------------

__global__ void im2colKernel(const float *__restrict__ x, float *__restrict__ cols, ConvDesc d,
                             int64_t total) {
  const int64_t ohw = d.oh * d.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / ohw, pos = i % ohw;
    const int64_t oy = pos / d.ow, ox = pos % d.ow;
    const int64_t kx = row % d.kw, ky = (row / d.kw) % d.kh, c = row / (d.kw * d.kh);
    const int64_t iy = oy * d.sh - d.ph + ky * d.dh, ix = ox * d.sw - d.pw + kx * d.dw;
    cols[i] = iy >= 0 && iy < d.h && ix >= 0 && ix < d.w ? x[(c * d.h + iy) * d.w + ix] : 0.f;
  }
}

/// The output positions o in [0, out) with o * s - p + k * dil == i for
/// some tap k: computed per tap by the caller; this gives o for tap k, or
/// -1 when none.
__device__ inline int64_t outputOf(int64_t i, int64_t k, int64_t s, int64_t p, int64_t dil,
                                   int64_t out) {
  const int64_t t = i + p - k * dil;
  if (t < 0 || t % s != 0) return -1;
  const int64_t o = t / s;
  return o < out ? o : -1;
}

__global__ void col2imKernel(const float *__restrict__ cols, float *__restrict__ dx, ConvDesc d,
                             int64_t total) {
  const int64_t ohw = d.oh * d.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ix = i % d.w, iy = (i / d.w) % d.h, c = i / (d.w * d.h);
    float s = 0.f;
    for (int64_t ky = 0; ky < d.kh; ++ky) {
      const int64_t oy = outputOf(iy, ky, d.sh, d.ph, d.dh, d.oh);
      if (oy < 0) continue;
      for (int64_t kx = 0; kx < d.kw; ++kx) {
        const int64_t ox = outputOf(ix, kx, d.sw, d.pw, d.dw, d.ow);
        if (ox < 0) continue;
        s += cols[((c * d.kh + ky) * d.kw + kx) * ohw + oy * d.ow + ox];
      }
    }
    dx[i] = s;
  }
}

__global__ void addChannelBiasKernel(float *__restrict__ y, const float *__restrict__ b, int64_t o,
                                     int64_t plane, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += b[(i / plane) % o];
}

/// cols [c*kh*kw, oh*ow]: row (ch, ky, kx), column (oy, ox) holds the input
/// element that tap reads, 0 in the padding.
void launchIm2col(const float *x, float *cols, const ConvDesc &d, cudaStream_t stream) {
  const int64_t total = d.c * d.kh * d.kw * d.oh * d.ow;
  if (total == 0) return;
  im2colKernel<<<gridFor(total), kThreads, 0, stream>>>(x, cols, d, total);
}

/// dx [c, h, w] = im2col's adjoint of cols: each input element sums the
/// column entries read from it, in (ky, kx) order (no atomics).
void launchCol2im(const float *cols, float *dx, const ConvDesc &d, cudaStream_t stream) {
  const int64_t total = d.c * d.h * d.w;
  if (total == 0) return;
  col2imKernel<<<gridFor(total), kThreads, 0, stream>>>(cols, dx, d, total);
}

/// y [n, o, plane] += b[o].
void launchAddChannelBias(float *y, const float *b, int64_t n, int64_t o, int64_t plane,
                          cudaStream_t stream) {
  const int64_t total = n * o * plane;
  if (total == 0) return;
  addChannelBiasKernel<<<gridFor(total), kThreads, 0, stream>>>(y, b, o, plane, total);
}

// ---- host side: at load, the launch of every step ---------------------------

ConvDesc descOf(const ConvGeom &d) {
  return {d.c, d.h, d.w, d.kh, d.kw, d.oh, d.ow, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw};
}

/// The geometry of the forward convolution of the instruction, of op `kind`
/// (ops/Window.h).
ConvGeom dimsOf(const KernelOperands &k, ops::OpKind kind) {
  ConvGeom d = ops::convGeom(kind, operandTypes(k), k.instr->attrs);
  for (int64_t v : {d.kk() * d.groups, d.ohw(), d.o, d.groups})
    if (v > INT_MAX) throw RuleError("conv2d dimension exceeds cuBLAS's int range");
  return d;
}

/// The columns of one image, all groups.
template <ops::OpKind Kind> int64_t columnFloats(const KernelOperands &k) {
  ConvGeom d = dimsOf(k, Kind);
  return d.kk() * d.groups * d.ohw();
}

/// The per-group geometry as cuBLAS ints.
struct Gemm {
  int og, kk, ohw, groups;
  long long wStride, colStride, yStride; ///< one group's block in w (dw), cols, y (dy)
};
Gemm gemmOf(const ConvGeom &d) {
  return {int(d.og()),
          int(d.kk()),
          int(d.ohw()),
          int(d.groups),
          static_cast<long long>(d.og() * d.kk()),
          static_cast<long long>(d.kk() * d.ohw()),
          static_cast<long long>(d.og() * d.ohw())};
}

Launch prepareConv2d(const KernelOperands &k) {
  const ConvGeom d = dimsOf(k, ops::OpKind::Conv2d);
  const bool bias = k.inputs.size() == 3;
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
  const ConvGeom d = dimsOf(k, ops::OpKind::Conv2dGradInput);
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
  const ConvGeom d = dimsOf(k, ops::OpKind::Conv2dGradWeight);
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
const CudaKernel Conv2d{columnFloats<ops::OpKind::Conv2d>, prepareConv2d};
const CudaKernel Conv2dGradInput{columnFloats<ops::OpKind::Conv2dGradInput>, prepareGradInput};
const CudaKernel Conv2dGradWeight{columnFloats<ops::OpKind::Conv2dGradWeight>,
                                   prepareGradWeight};
} // namespace kernels::Conv

} // namespace mpc::runtime::cuda
