//===- runtime/cpu/kernels/Pool.cpp - max, average and global pooling -----===//
//
// Plain loops over each (n, c) plane, output positions in row-major order,
// with the reference kernels' window rules (ops/Window.h): max pooling
// keeps the first maximum of a window (rows, then columns), which its
// gradient recomputes from x to route dy; average pooling sums in double and
// divides by PyTorch's divisor. The gradients scatter in output order onto a
// zeroed dx, so overlapping windows add up in a fixed order.
//
//===----------------------------------------------------------------------===//
#include "ops/Window.h"
#include "runtime/cpu/CpuKernel.h"

#include <cstring>

namespace mpc::runtime::cpu {

using ops::PoolGeom;
using ops::PoolWindow;

namespace {

/// The geometry stored in k.ints by preparePool.
PoolGeom dimsOf(const KernelInstance &k) {
  const std::vector<int64_t> &v = k.ints;
  PoolGeom d;
  d.n = v[0], d.c = v[1], d.h = v[2], d.w = v[3], d.kh = v[4], d.kw = v[5], d.sh = v[6];
  d.sw = v[7], d.ph = v[8], d.pw = v[9], d.oh = v[10], d.ow = v[11], d.countPad = v[12] != 0;
  return d;
}

/// Reads the geometry of the instruction (op `kind`) into k.ints.
void preparePool(KernelInstance &k, ops::OpKind kind) {
  PoolGeom d = ops::poolGeom(kind, operandTypes(k), k.attrMap());
  k.ints = {d.n, d.c, d.h, d.w, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.oh, d.ow, d.countPad};
}

/// Calls f(x plane offset, y index, window) for every output position.
template <typename F> void forEachWindow(const PoolGeom &d, F f) {
  for (int64_t p = 0; p < d.n * d.c; ++p)
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox)
        f(p * d.h * d.w, (p * d.oh + oy) * d.ow + ox, ops::poolWindow(d, oy, ox));
}

/// Index within the plane of the window's first maximum.
int64_t argmax(const PoolGeom &d, const float *plane, const PoolWindow &win) {
  int64_t best = win.y0 * d.w + win.x0;
  for (int64_t y = win.y0; y < win.y1; ++y)
    for (int64_t x = win.x0; x < win.x1; ++x)
      if (plane[y * d.w + x] > plane[best]) best = y * d.w + x;
  return best;
}

// max_pool2d(x), avg_pool2d(x)
void prepareMaxPool(KernelInstance &k) { preparePool(k, ops::OpKind::MaxPool2d); }
void prepareAvgPool(KernelInstance &k) { preparePool(k, ops::OpKind::AvgPool2d); }

void runMaxPool(const KernelInstance &k) {
  const PoolGeom d = dimsOf(k);
  const float *x = k.in[0].f();
  float *y = k.out.f();
  forEachWindow(d, [&](int64_t xp, int64_t yi, const PoolWindow &win) {
    y[yi] = x[xp + argmax(d, x + xp, win)];
  });
}

void runAvgPool(const KernelInstance &k) {
  const PoolGeom d = dimsOf(k);
  const float *x = k.in[0].f();
  float *y = k.out.f();
  forEachWindow(d, [&](int64_t xp, int64_t yi, const PoolWindow &win) {
    double s = 0;
    for (int64_t r = win.y0; r < win.y1; ++r)
      for (int64_t c = win.x0; c < win.x1; ++c) s += x[xp + r * d.w + c];
    y[yi] = float(s / double(win.divisor));
  });
}

// max_pool2d_grad(x, dy) -> dx
void prepareMaxGrad(KernelInstance &k) { preparePool(k, ops::OpKind::MaxPool2dGrad); }

void runMaxGrad(const KernelInstance &k) {
  const PoolGeom d = dimsOf(k);
  const float *x = k.in[0].f(), *dy = k.in[1].f();
  float *dx = k.out.f();
  std::memset(dx, 0, size_t(k.out.numel) * sizeof(float));
  forEachWindow(d, [&](int64_t xp, int64_t yi, const PoolWindow &win) {
    dx[xp + argmax(d, x + xp, win)] += dy[yi];
  });
}

// avg_pool2d_grad(dy) -> dx
void prepareAvgGrad(KernelInstance &k) { preparePool(k, ops::OpKind::AvgPool2dGrad); }

void runAvgGrad(const KernelInstance &k) {
  const PoolGeom d = dimsOf(k);
  const float *dy = k.in[0].f();
  float *dx = k.out.f();
  std::memset(dx, 0, size_t(k.out.numel) * sizeof(float));
  forEachWindow(d, [&](int64_t xp, int64_t yi, const PoolWindow &win) {
    const float share = float(double(dy[yi]) / double(win.divisor));
    for (int64_t r = win.y0; r < win.y1; ++r)
      for (int64_t c = win.x0; c < win.x1; ++c) dx[xp + r * d.w + c] += share;
  });
}

// global_avg_pool2d(x) -> [N, C, 1, 1]
void prepareGlobal(KernelInstance &k) {
  const TensorArg &x = k.in[0];
  k.outer = x.shape[0] * x.shape[1];
  k.inner = x.shape[2] * x.shape[3];
}

void runGlobal(const KernelInstance &k) {
  const float *x = k.in[0].f();
  for (int64_t p = 0; p < k.outer; ++p) {
    double s = 0;
    for (int64_t i = 0; i < k.inner; ++i) s += x[p * k.inner + i];
    k.out.f()[p] = float(s / double(k.inner));
  }
}

} // namespace

namespace kernels::Pool {
const CpuKernel MaxPool2d{prepareMaxPool, runMaxPool};
const CpuKernel MaxPool2dGrad{prepareMaxGrad, runMaxGrad};
const CpuKernel AvgPool2d{prepareAvgPool, runAvgPool};
const CpuKernel AvgPool2dGrad{prepareAvgGrad, runAvgGrad};
const CpuKernel GlobalAvgPool2d{prepareGlobal, runGlobal};
} // namespace kernels::Pool

} // namespace mpc::runtime::cpu
