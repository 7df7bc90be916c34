//===- runtime/cpu/kernels/Conv.cpp - conv2d through im2col and sgemm -----===//
//
// Each image is unfolded into columns (im2col): for every input channel c and
// kernel tap (ky, kx), one row holding the input value each output position
// reads there (0 in the padding), so the convolution of group g is one
// product W_g [O/g, C/g*KH*KW] x cols_g [C/g*KH*KW, OH*OW] through
// cblas_sgemm. The input gradient is the transposed product W_g^T dy_g folded
// back onto the image (col2im: each column entry added to the input element
// it was read from); the weight gradient sums dy_g cols_g^T over the images
// in order (beta = 1 from the second). The columns live in the device's f32
// scratch (KernelInstance::floats), allocated once at load and shared by the
// device's kernels. OpenBLAS runs with one thread, so the summation order
// depends on the shapes only and results are reproducible.
//
//===----------------------------------------------------------------------===//
#include "ops/Window.h"
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

#include <cblas.h>
#include <cstring>

namespace mpc::runtime::cpu {

using ops::ConvGeom;

namespace {

/// The geometry stored in k.ints by prepareDims.
ConvGeom dimsOf(const KernelInstance &k) {
  const std::vector<int64_t> &v = k.ints;
  ConvGeom d;
  d.n = v[0], d.c = v[1], d.h = v[2], d.w = v[3], d.o = v[4], d.kh = v[5], d.kw = v[6];
  d.oh = v[7], d.ow = v[8], d.sh = v[9], d.sw = v[10], d.ph = v[11], d.pw = v[12];
  d.dh = v[13], d.dw = v[14], d.groups = v[15];
  return d;
}

/// Reads the geometry of the instruction (op `kind`) into k.ints and asks
/// for the columns of one image (all groups) as scratch.
void prepareDims(KernelInstance &k, ops::OpKind kind) {
  ConvGeom d = ops::convGeom(kind, operandTypes(k), k.attrMap());
  const int64_t kMax = int64_t(1) << 31;
  if (d.kk() * d.groups >= kMax || d.ohw() >= kMax || d.o >= kMax)
    throw RuleError("conv2d dimensions too large for BLAS");
  k.ints = {d.n,  d.c,  d.h,  d.w,  d.o,  d.kh, d.kw, d.oh,
            d.ow, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups};
  k.scratchFloats = d.kk() * d.groups * d.ohw();
}

/// cols [C*KH*KW, OH*OW] of one image x [C, H, W].
void im2col(const ConvGeom &d, const float *x, float *cols) {
  for (int64_t c = 0; c < d.c; ++c)
    for (int64_t ky = 0; ky < d.kh; ++ky)
      for (int64_t kx = 0; kx < d.kw; ++kx) {
        float *row = cols + ((c * d.kh + ky) * d.kw + kx) * d.ohw();
        const float *plane = x + c * d.h * d.w;
        for (int64_t oy = 0; oy < d.oh; ++oy) {
          const int64_t iy = oy * d.sh - d.ph + ky * d.dh;
          float *out = row + oy * d.ow;
          if (iy < 0 || iy >= d.h) {
            std::memset(out, 0, size_t(d.ow) * sizeof(float));
            continue;
          }
          for (int64_t ox = 0; ox < d.ow; ++ox) {
            const int64_t ix = ox * d.sw - d.pw + kx * d.dw;
            out[ox] = ix >= 0 && ix < d.w ? plane[iy * d.w + ix] : 0.f;
          }
        }
      }
}

/// dx [C, H, W] = the sum of each column entry onto the element it reads
/// (im2col's adjoint), entries taken in im2col's order.
void col2im(const ConvGeom &d, const float *cols, float *dx) {
  std::memset(dx, 0, size_t(d.c * d.h * d.w) * sizeof(float));
  for (int64_t c = 0; c < d.c; ++c)
    for (int64_t ky = 0; ky < d.kh; ++ky)
      for (int64_t kx = 0; kx < d.kw; ++kx) {
        const float *row = cols + ((c * d.kh + ky) * d.kw + kx) * d.ohw();
        float *plane = dx + c * d.h * d.w;
        for (int64_t oy = 0; oy < d.oh; ++oy) {
          const int64_t iy = oy * d.sh - d.ph + ky * d.dh;
          if (iy < 0 || iy >= d.h) continue;
          for (int64_t ox = 0; ox < d.ow; ++ox) {
            const int64_t ix = ox * d.sw - d.pw + kx * d.dw;
            if (ix >= 0 && ix < d.w) plane[iy * d.w + ix] += row[oy * d.ow + ox];
          }
        }
      }
}

/// Row-major C[m,n] = op(A) op(B) + beta C.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda,
          const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m),
              int(n), int(kk), 1.0f, a, int(std::max<int64_t>(1, lda)), b,
              int(std::max<int64_t>(1, ldb)), beta, c, int(std::max<int64_t>(1, ldc)));
}

// conv2d(x, w[, b]) -> y
void prepareConv2d(KernelInstance &k) { prepareDims(k, ops::OpKind::Conv2d); }

void runConv2d(const KernelInstance &k) {
  const ConvGeom d = dimsOf(k);
  float *cols = k.floats;
  const float *w = k.in[1].f();
  for (int64_t n = 0; n < d.n; ++n) {
    float *y = k.out.f() + n * d.o * d.ohw();
    im2col(d, k.in[0].f() + n * d.c * d.h * d.w, cols);
    for (int64_t g = 0; g < d.groups; ++g)
      gemm(false, false, d.og(), d.ohw(), d.kk(), w + g * d.og() * d.kk(), d.kk(),
           cols + g * d.kk() * d.ohw(), d.ohw(), 0.f, y + g * d.og() * d.ohw(), d.ohw());
    if (k.in.size() == 3)
      for (int64_t o = 0; o < d.o; ++o) {
        const float bias = k.in[2].f()[o];
        float *plane = y + o * d.ohw();
        for (int64_t p = 0; p < d.ohw(); ++p) plane[p] += bias;
      }
  }
}

// conv2d_grad_input(dy, w) -> dx
void prepareGradInput(KernelInstance &k) { prepareDims(k, ops::OpKind::Conv2dGradInput); }

void runGradInput(const KernelInstance &k) {
  const ConvGeom d = dimsOf(k);
  float *cols = k.floats;
  const float *w = k.in[1].f();
  for (int64_t n = 0; n < d.n; ++n) {
    const float *dy = k.in[0].f() + n * d.o * d.ohw();
    for (int64_t g = 0; g < d.groups; ++g)
      gemm(true, false, d.kk(), d.ohw(), d.og(), w + g * d.og() * d.kk(), d.kk(),
           dy + g * d.og() * d.ohw(), d.ohw(), 0.f, cols + g * d.kk() * d.ohw(), d.ohw());
    col2im(d, cols, k.out.f() + n * d.c * d.h * d.w);
  }
}

// conv2d_grad_weight(x, dy) -> dw
void prepareGradWeight(KernelInstance &k) { prepareDims(k, ops::OpKind::Conv2dGradWeight); }

void runGradWeight(const KernelInstance &k) {
  const ConvGeom d = dimsOf(k);
  float *cols = k.floats;
  if (d.n == 0) std::memset(k.out.data, 0, size_t(k.out.numel) * sizeof(float));
  for (int64_t n = 0; n < d.n; ++n) {
    const float *dy = k.in[1].f() + n * d.o * d.ohw();
    im2col(d, k.in[0].f() + n * d.c * d.h * d.w, cols);
    for (int64_t g = 0; g < d.groups; ++g)
      gemm(false, true, d.og(), d.kk(), d.ohw(), dy + g * d.og() * d.ohw(), d.ohw(),
           cols + g * d.kk() * d.ohw(), d.ohw(), n == 0 ? 0.f : 1.f,
           k.out.f() + g * d.og() * d.kk(), d.kk());
  }
}

} // namespace

namespace kernels::Conv {
const CpuKernel Conv2d{prepareConv2d, runConv2d};
const CpuKernel Conv2dGradInput{prepareGradInput, runGradInput};
const CpuKernel Conv2dGradWeight{prepareGradWeight, runGradWeight};
} // namespace kernels::Conv

} // namespace mpc::runtime::cpu
