//===- runtime/cuda/kernels/Softmax.cu - softmax along an axis, causal_mask ===//
//
// Normalisation along one axis of a tensor seen as [outer, size, inner].
// When the axis is the last one (inner == 1, the common case) one warp
// handles a row: lanes stride over it, warp shuffles combine the maximum
// and the sum in a fixed butterfly order. Otherwise one thread walks each
// (outer, inner) lane sequentially. Both subtract the maximum first, like
// the reference kernel.
//
// causal_mask, which feeds attention scores to softmax, is a copy that sets
// the entries above the diagonal of each [rows, cols] matrix (the tensor seen
// as [matrices, rows, cols]): a block per matrix row, its threads over the
// columns. In place (y == x) it writes only the masked entries.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

/// Softmax family along one axis, the tensor seen as [outer, size, inner].
enum class SoftmaxKind : int { Softmax, LogSoftmax };

// ---- device kernels and their launchers --------------------------------------

template <bool Log>
__global__ void softmaxRowKernel(const float *__restrict__ x, float *__restrict__ y,
                                 int64_t rows, int64_t size) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float *xr = x + row * size;
    float *yr = y + row * size;
    float mx = -INFINITY;
    for (int64_t j = lane; j < size; j += 32) mx = fmaxf(mx, xr[j]);
    mx = warpMax(mx);
    float sum = 0.f;
    for (int64_t j = lane; j < size; j += 32) sum += expf(xr[j] - mx);
    sum = warpSum(sum);
    float logSum = logf(sum);
    for (int64_t j = lane; j < size; j += 32) {
      float z = xr[j] - mx;
      yr[j] = Log ? z - logSum : expf(z) / sum;
    }
  }
}

template <bool Log>
__global__ void softmaxLaneKernel(const float *__restrict__ x, float *__restrict__ y,
                                  int64_t outer, int64_t size, int64_t inner) {
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < outer * inner;
       l += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (l / inner) * size * inner + l % inner;
    float mx = -INFINITY;
    for (int64_t j = 0; j < size; ++j) mx = fmaxf(mx, x[base + j * inner]);
    float sum = 0.f;
    for (int64_t j = 0; j < size; ++j) sum += expf(x[base + j * inner] - mx);
    float logSum = logf(sum);
    for (int64_t j = 0; j < size; ++j) {
      float z = x[base + j * inner] - mx;
      y[base + j * inner] = Log ? z - logSum : expf(z) / sum;
    }
  }
}

__global__ void softmaxGradRowKernel(const float *__restrict__ y, const float *__restrict__ dy,
                                     float *__restrict__ dx, int64_t rows, int64_t size) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float *yr = y + row * size, *dyr = dy + row * size;
    float dot = 0.f;
    for (int64_t j = lane; j < size; j += 32) dot += dyr[j] * yr[j];
    dot = warpSum(dot);
    for (int64_t j = lane; j < size; j += 32) dx[row * size + j] = yr[j] * (dyr[j] - dot);
  }
}

__global__ void softmaxGradLaneKernel(const float *__restrict__ y, const float *__restrict__ dy,
                                      float *__restrict__ dx, int64_t outer, int64_t size,
                                      int64_t inner) {
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < outer * inner;
       l += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (l / inner) * size * inner + l % inner;
    float dot = 0.f;
    for (int64_t j = 0; j < size; ++j) dot += dy[base + j * inner] * y[base + j * inner];
    for (int64_t j = 0; j < size; ++j) {
      int64_t k = base + j * inner;
      dx[k] = y[k] * (dy[k] - dot);
    }
  }
}

__global__ void causalMaskKernel(const float *x, float *y, int64_t matRows, int64_t rows,
                                 int64_t cols, float value) {
  const bool copy = x != y;
  for (int64_t r = blockIdx.x; r < matRows; r += gridDim.x) {
    int64_t i = r % rows; // the row within its matrix
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      if (j > i) yr[j] = value;
      else if (copy) yr[j] = xr[j];
    }
  }
}

/// y = x with y[m, i, j] = value where j > i, x seen as [mats, rows, cols]
/// (causal_mask). y may be x (then only the masked entries are written).
void launchCausalMask(const float *x, float *y, int64_t mats, int64_t rows, int64_t cols,
                      float value, cudaStream_t stream) {
  int64_t matRows = mats * rows;
  if (matRows == 0 || cols == 0) return;
  unsigned threads = 32;
  while (threads < 256 && int64_t(threads) < cols) threads <<= 1;
  int64_t blocks = matRows < (int64_t(1) << 20) ? matRows : int64_t(1) << 20;
  causalMaskKernel<<<unsigned(blocks), threads, 0, stream>>>(x, y, matRows, rows, cols, value);
}

void launchSoftmax(SoftmaxKind kind, const float *x, float *y, int64_t outer, int64_t size,
                   int64_t inner, cudaStream_t stream) {
  if (outer * size * inner == 0) return;
  bool log = kind == SoftmaxKind::LogSoftmax;
  if (inner == 1) {
    unsigned g = warpGrid(outer);
    if (log) softmaxRowKernel<true><<<g, 32 * kWarpsPerBlock, 0, stream>>>(x, y, outer, size);
    else softmaxRowKernel<false><<<g, 32 * kWarpsPerBlock, 0, stream>>>(x, y, outer, size);
  } else {
    unsigned g = gridFor(outer * inner);
    if (log) softmaxLaneKernel<true><<<g, kThreads, 0, stream>>>(x, y, outer, size, inner);
    else softmaxLaneKernel<false><<<g, kThreads, 0, stream>>>(x, y, outer, size, inner);
  }
}

/// dx = y * (dy - sum_axis(dy * y)).
void launchSoftmaxGrad(const float *y, const float *dy, float *dx, int64_t outer, int64_t size,
                       int64_t inner, cudaStream_t stream) {
  if (outer * size * inner == 0) return;
  if (inner == 1)
    softmaxGradRowKernel<<<warpGrid(outer), 32 * kWarpsPerBlock, 0, stream>>>(y, dy, dx, outer,
                                                                             size);
  else
    softmaxGradLaneKernel<<<gridFor(outer * inner), kThreads, 0, stream>>>(y, dy, dx, outer,
                                                                          size, inner);
}

// ---- host side: at load, the launch of every step ---------------------------

Split splitAxis(const KernelOperands &k) {
  const std::vector<int64_t> &shape = k.inputs[0]->shape;
  return splitAt(shape, normAxis(attrInt(k.instr->attrs, "axis"), shape.size()));
}

template <SoftmaxKind Kind> Launch prepareSoftmax(const KernelOperands &k) {
  Split sp = splitAxis(k);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchSoftmax(Kind, x, y, sp.outer, sp.size, sp.inner, s); };
}

Launch prepareSoftmaxGrad(const KernelOperands &k) {
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
  const plan::Buffer *x = k.inputs[0];
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
