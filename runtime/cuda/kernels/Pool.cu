//===- runtime/cuda/kernels/Pool.cu - max, average and global pooling -----===//
//
// The window geometry comes from ops/Window.h, as on the CPU. One thread per
// output element for the forward pools, one per input element for their
// gradients: each gathers dy from the windows that reach it, in output order,
// recomputing a max window's first maximum (PyTorch's tie rule) where the CPU
// scatters; the sums meet each element in the same order, so both runtimes
// agree bit for bit. global_avg_pool2d sums each plane in order in float64,
// one thread per plane.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "ops/Window.h"

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

/// Pooling over `planes` (n * c) planes of h x w to oh x ow (ops/Window.h's
/// PoolGeom). Windows as the CPU: max keeps the first maximum (rows, then
/// columns); the gradients gather, each input element adding the windows
/// that reach it in output order, so results are the CPU's bit for bit.
struct PoolDesc {
  int64_t planes, h, w, kh, kw, sh, sw, ph, pw, oh, ow;
  bool countPad;
};

// ---- device kernels and their launchers --------------------------------------

struct Win {
  int64_t y0, y1, x0, x1, divisor;
};

/// ops/Window.cpp's poolWindow.
__device__ inline Win windowAt(const PoolDesc &d, int64_t oy, int64_t ox) {
  int64_t y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
  int64_t y1 = min(y0 + d.kh, d.h + d.ph), x1 = min(x0 + d.kw, d.w + d.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = max(y0, int64_t(0)), x0 = max(x0, int64_t(0));
  y1 = min(y1, d.h), x1 = min(x1, d.w);
  return {y0, y1, x0, x1, d.countPad ? padded : (y1 - y0) * (x1 - x0)};
}

__device__ inline int64_t argmaxOf(const PoolDesc &d, const float *plane, const Win &win) {
  int64_t best = win.y0 * d.w + win.x0;
  for (int64_t y = win.y0; y < win.y1; ++y)
    for (int64_t x = win.x0; x < win.x1; ++x)
      if (plane[y * d.w + x] > plane[best]) best = y * d.w + x;
  return best;
}

/// The outputs [lo, hi) along one axis whose windows hold input index i.
__device__ inline void windowsOver(int64_t i, int64_t k, int64_t s, int64_t p, int64_t out,
                                   int64_t &lo, int64_t &hi) {
  // o * s - p <= i < o * s - p + k
  const int64_t a = i + p - k + 1;
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  hi = min((i + p) / s + 1, out);
}

__global__ void maxPoolKernel(const float *__restrict__ x, float *__restrict__ y, PoolDesc d,
                              int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % d.ow, oy = (i / d.ow) % d.oh, p = i / (d.ow * d.oh);
    const float *plane = x + p * d.h * d.w;
    y[i] = plane[argmaxOf(d, plane, windowAt(d, oy, ox))];
  }
}

__global__ void avgPoolKernel(const float *__restrict__ x, float *__restrict__ y, PoolDesc d,
                              int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % d.ow, oy = (i / d.ow) % d.oh, p = i / (d.ow * d.oh);
    const float *plane = x + p * d.h * d.w;
    const Win win = windowAt(d, oy, ox);
    double s = 0;
    for (int64_t r = win.y0; r < win.y1; ++r)
      for (int64_t c = win.x0; c < win.x1; ++c) s += double(plane[r * d.w + c]);
    y[i] = float(s / double(win.divisor));
  }
}

__global__ void maxPoolGradKernel(const float *__restrict__ x, const float *__restrict__ dy,
                                  float *__restrict__ dx, PoolDesc d, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ix = i % d.w, iy = (i / d.w) % d.h, p = i / (d.w * d.h);
    const float *plane = x + p * d.h * d.w;
    const int64_t self = iy * d.w + ix;
    int64_t ylo, yhi, xlo, xhi;
    windowsOver(iy, d.kh, d.sh, d.ph, d.oh, ylo, yhi);
    windowsOver(ix, d.kw, d.sw, d.pw, d.ow, xlo, xhi);
    float s = 0.f;
    for (int64_t oy = ylo; oy < yhi; ++oy)
      for (int64_t ox = xlo; ox < xhi; ++ox)
        if (argmaxOf(d, plane, windowAt(d, oy, ox)) == self) s += dy[(p * d.oh + oy) * d.ow + ox];
    dx[i] = s;
  }
}

__global__ void avgPoolGradKernel(const float *__restrict__ dy, float *__restrict__ dx, PoolDesc d,
                                  int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ix = i % d.w, iy = (i / d.w) % d.h, p = i / (d.w * d.h);
    int64_t ylo, yhi, xlo, xhi;
    windowsOver(iy, d.kh, d.sh, d.ph, d.oh, ylo, yhi);
    windowsOver(ix, d.kw, d.sw, d.pw, d.ow, xlo, xhi);
    float s = 0.f;
    for (int64_t oy = ylo; oy < yhi; ++oy)
      for (int64_t ox = xlo; ox < xhi; ++ox) {
        const Win win = windowAt(d, oy, ox);
        // ceil_mode's last window may be cut short of the element.
        if (iy < win.y0 || iy >= win.y1 || ix < win.x0 || ix >= win.x1) continue;
        s += float(double(dy[(p * d.oh + oy) * d.ow + ox]) / double(win.divisor));
      }
    dx[i] = s;
  }
}

__global__ void globalAvgPoolKernel(const float *__restrict__ x, float *__restrict__ y,
                                    int64_t planes, int64_t plane) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < planes;
       p += int64_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int64_t i = 0; i < plane; ++i) s += double(x[p * plane + i]);
    y[p] = float(s / double(plane));
  }
}

void launchMaxPool2d(const float *x, float *y, const PoolDesc &d, cudaStream_t stream) {
  const int64_t total = d.planes * d.oh * d.ow;
  if (total == 0) return;
  maxPoolKernel<<<gridFor(total), kThreads, 0, stream>>>(x, y, d, total);
}

void launchMaxPool2dGrad(const float *x, const float *dy, float *dx, const PoolDesc &d,
                         cudaStream_t stream) {
  const int64_t total = d.planes * d.h * d.w;
  if (total == 0) return;
  maxPoolGradKernel<<<gridFor(total), kThreads, 0, stream>>>(x, dy, dx, d, total);
}

void launchAvgPool2d(const float *x, float *y, const PoolDesc &d, cudaStream_t stream) {
  const int64_t total = d.planes * d.oh * d.ow;
  if (total == 0) return;
  avgPoolKernel<<<gridFor(total), kThreads, 0, stream>>>(x, y, d, total);
}

void launchAvgPool2dGrad(const float *dy, float *dx, const PoolDesc &d, cudaStream_t stream) {
  const int64_t total = d.planes * d.h * d.w;
  if (total == 0) return;
  avgPoolGradKernel<<<gridFor(total), kThreads, 0, stream>>>(dy, dx, d, total);
}

/// y[p] = mean of the `plane` elements of plane p, summed in order in float64.
void launchGlobalAvgPool2d(const float *x, float *y, int64_t planes, int64_t plane,
                           cudaStream_t stream) {
  if (planes == 0) return;
  globalAvgPoolKernel<<<gridFor(planes), kThreads, 0, stream>>>(x, y, planes, plane);
}

// ---- host side: at load, the launch of every step ---------------------------

/// The geometry of the instruction's pool (op `kind`) as a descriptor.
PoolDesc descOf(const KernelOperands &k, ops::OpKind kind) {
  ops::PoolGeom d = ops::poolGeom(kind, operandTypes(k), k.instr->attrs);
  return {d.n * d.c, d.h, d.w, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.oh, d.ow, d.countPad};
}

Launch prepareMaxPool(const KernelOperands &k) {
  PoolDesc d = descOf(k, ops::OpKind::MaxPool2d);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchMaxPool2d(x, y, d, s); };
}

Launch prepareAvgPool(const KernelOperands &k) {
  PoolDesc d = descOf(k, ops::OpKind::AvgPool2d);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchAvgPool2d(x, y, d, s); };
}

Launch prepareMaxPoolGrad(const KernelOperands &k) {
  PoolDesc d = descOf(k, ops::OpKind::MaxPool2dGrad);
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchMaxPool2dGrad(x, dy, dx, d, s); };
}

Launch prepareAvgPoolGrad(const KernelOperands &k) {
  PoolDesc d = descOf(k, ops::OpKind::AvgPool2dGrad);
  const float *dy = cf(k.inPtr[0]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchAvgPool2dGrad(dy, dx, d, s); };
}

Launch prepareGlobalAvgPool(const KernelOperands &k) {
  const plan::Buffer *x = k.inputs[0];
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
