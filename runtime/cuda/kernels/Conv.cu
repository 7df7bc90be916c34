//===- runtime/cuda/kernels/Conv.cu - im2col, col2im and the bias of conv2d ===//
//
// The device half of conv2d: the columns of one image (im2col, one thread
// per column entry), their adjoint folded back onto the image (col2im, one
// thread per input element gathering the taps that read it, so no atomics
// and a fixed order), and the per-channel bias. The products between them
// are cuBLAS sgemms (Conv.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

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

} // namespace

void launchIm2col(const float *x, float *cols, const ConvDesc &d, cudaStream_t stream) {
  const int64_t total = d.c * d.kh * d.kw * d.oh * d.ow;
  if (total == 0) return;
  im2colKernel<<<gridFor(total), kThreads, 0, stream>>>(x, cols, d, total);
}

void launchCol2im(const float *cols, float *dx, const ConvDesc &d, cudaStream_t stream) {
  const int64_t total = d.c * d.h * d.w;
  if (total == 0) return;
  col2imKernel<<<gridFor(total), kThreads, 0, stream>>>(cols, dx, d, total);
}

void launchAddChannelBias(float *y, const float *b, int64_t n, int64_t o, int64_t plane,
                          cudaStream_t stream) {
  const int64_t total = n * o * plane;
  if (total == 0) return;
  addChannelBiasKernel<<<gridFor(total), kThreads, 0, stream>>>(y, b, o, plane, total);
}

} // namespace mpc::runtime::cuda
