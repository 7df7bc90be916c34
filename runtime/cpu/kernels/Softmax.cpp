//===- runtime/cpu/kernels/Softmax.cpp - softmax, its grad, causal_mask -===//
//
// Along one axis of a buffer viewed as [outer, axis, inner]: each lane is
// normalised stably (maximum subtracted first), with the exponential sum in
// double like the reference kernel. causal_mask, which prepares attention
// scores for softmax, lives here too.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/VectorMath.h"

#include <algorithm>
#include <cmath>

namespace mpc::runtime::cpu {

namespace {

// The axis is in range: proven by the plan verifier.
void prepareLanes(KernelInstance &k) {
  const std::vector<int64_t> &shape = k.out.shape;
  int64_t rank = int64_t(shape.size());
  int64_t axis = attrInt(k.attrMap(), "axis");
  int64_t a = axis < 0 ? axis + rank : axis;
  k.outer = k.axis = k.inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < a) k.outer *= shape[size_t(i)];
    else if (i == a) k.axis = shape[size_t(i)];
    else k.inner *= shape[size_t(i)];
  }
}

/// softmax along the last axis (attention's case): the exponentials go
/// through the vectorised float exp (VectorMath.h, <= 1 ulp) into the result
/// row, summed in double, then scaled.
void runSoftmaxLastAxis(const KernelInstance &k) {
  const float *x = k.in[0].f();
  float *o = k.out.f();
  const int64_t n = k.axis;
  for (int64_t b = 0; b < k.outer; ++b) {
    const float *px = x + b * n;
    float *po = o + b * n;
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, px[j]);
    for (int64_t j = 0; j < n; ++j) po[j] = px[j] - mx; // px may be po
    vmath::expLoop(po, po, n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += po[j];
    const float inv = float(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) po[j] *= inv;
  }
}

template <bool Log> void runSoftmax(const KernelInstance &k) {
  if (!Log && k.inner == 1) return runSoftmaxLastAxis(k);
  const float *x = k.in[0].f();
  float *o = k.out.f();
  int64_t n = k.axis, st = k.inner;
  for (int64_t b = 0; b < k.outer; ++b)
    for (int64_t i = 0; i < k.inner; ++i) {
      const float *px = x + b * n * st + i;
      float *po = o + b * n * st + i;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, double(px[j * st]));
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(double(px[j * st]) - mx);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < n; ++j) {
        double z = double(px[j * st]) - mx;
        po[j * st] = float(Log ? z - logSum : std::exp(z) / sum);
      }
    }
}

void runSoftmaxGrad(const KernelInstance &k) {
  const float *y = k.in[0].f(), *dy = k.in[1].f();
  float *o = k.out.f();
  int64_t n = k.axis, st = k.inner;
  for (int64_t b = 0; b < k.outer; ++b)
    for (int64_t i = 0; i < k.inner; ++i) {
      int64_t base = b * n * st + i;
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += double(dy[base + j * st]) * double(y[base + j * st]);
      for (int64_t j = 0; j < n; ++j)
        o[base + j * st] = float(double(y[base + j * st]) * (double(dy[base + j * st]) - dot));
    }
}

// causal_mask: ints = {rows, cols} of the last two axes; scalar = value.
void prepareCausalMask(KernelInstance &k) {
  k.ints = {k.out.shape[size_t(k.out.rank() - 2)], k.out.shape[size_t(k.out.rank() - 1)]};
  k.scalar = attrFloat(k.attrMap(), "value");
}

/// Row i of each [rows, cols] matrix keeps columns 0..i and gets `value`
/// after; in place when the plan gives the result x's buffer.
void runCausalMask(const KernelInstance &k) {
  const int64_t rows = k.ints[0], cols = k.ints[1];
  const float value = float(k.scalar);
  const float *x = k.in[0].f();
  float *o = k.out.f();
  if (rows == 0 || cols == 0) return;
  for (int64_t base = 0; base < k.out.numel; base += rows * cols)
    for (int64_t i = 0; i < rows; ++i) {
      const float *px = x + base + i * cols;
      float *po = o + base + i * cols;
      const int64_t keep = std::min(cols, i + 1);
      if (po != px) std::copy(px, px + keep, po);
      std::fill(po + keep, po + cols, value);
    }
}

} // namespace

namespace kernels::Softmax {
const CpuKernel CausalMask{prepareCausalMask, runCausalMask};
const CpuKernel Softmax{prepareLanes, runSoftmax<false>};
const CpuKernel LogSoftmax{prepareLanes, runSoftmax<true>};
const CpuKernel SoftmaxGrad{prepareLanes, runSoftmaxGrad};
} // namespace kernels::Softmax

} // namespace mpc::runtime::cpu
