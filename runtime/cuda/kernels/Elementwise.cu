//===- runtime/cuda/kernels/Elementwise.cu - unary, binary, gather, fill -===//
//
// Elementwise ops. Binary ops broadcast NumPy style through a StridedDesc
// whose broadcast dims have stride 0; equal shapes take a flat fast path.
// gather serves transpose and broadcast_to (a strided read, contiguous
// write). The math follows the reference kernels in float32: gelu in its
// exact erf form.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

__device__ inline float applyUnary(UnaryOp op, float x, float alpha) {
  switch (op) {
  case UnaryOp::Neg: return -x;
  case UnaryOp::Scale: return alpha * x;
  case UnaryOp::Relu: return x > 0.f ? x : 0.f;
  case UnaryOp::Sigmoid: return 1.f / (1.f + expf(-x));
  case UnaryOp::Tanh: return tanhf(x);
  case UnaryOp::Gelu: return 0.5f * x * (1.f + erff(x * kInvSqrt2));
  case UnaryOp::Exp: return expf(x);
  case UnaryOp::Log: return logf(x);
  }
  return 0.f;
}

__device__ inline float applyBinary(BinaryOp op, float a, float b) {
  switch (op) {
  case BinaryOp::Add: return a + b;
  case BinaryOp::Sub: return a - b;
  case BinaryOp::Mul: return a * b;
  case BinaryOp::Div: return a / b;
  case BinaryOp::ReluGrad: return a > 0.f ? b : 0.f; // a = x, b = dy
  case BinaryOp::GeluGrad: {                          // a = x, b = dy
    float cdf = 0.5f * (1.f + erff(a * kInvSqrt2));
    return b * (cdf + a * kInvSqrt2Pi * expf(-0.5f * a * a));
  }
  case BinaryOp::TanhGrad: return b * (1.f - a * a);        // a = y, b = dy
  case BinaryOp::SigmoidGrad: return b * (a * (1.f - a));   // a = y, b = dy
  }
  return 0.f;
}

template <UnaryOp Op>
__global__ void unaryKernel(const float *__restrict__ x, float *__restrict__ y, int64_t n,
                            float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = applyUnary(Op, x[i], alpha);
}

template <BinaryOp Op>
__global__ void binaryFlatKernel(const float *__restrict__ a, const float *__restrict__ b,
                                 float *__restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = applyBinary(Op, a[i], b[i]);
}

template <BinaryOp Op>
__global__ void binaryStridedKernel(const float *__restrict__ a, const float *__restrict__ b,
                                    float *__restrict__ y, StridedDesc d) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < d.count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oa, ob;
    stridedOffsets(d, i, oa, ob);
    y[i] = applyBinary(Op, a[oa], b[ob]);
  }
}

__global__ void gatherKernel(const uint32_t *__restrict__ x, uint32_t *__restrict__ y,
                             StridedDesc d) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < d.count;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[stridedOffsetA(d, i)];
}

__global__ void fillKernel(float *y, int64_t n, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = value;
}

/// True when the descriptor reads both operands with the output's own
/// row-major strides (no broadcasting).
bool isFlat(const StridedDesc &d) {
  int64_t s = 1;
  for (int k = d.rank - 1; k >= 0; --k) {
    if (d.dims[k] != 1 && (d.strideA[k] != s || d.strideB[k] != s)) return false;
    s *= d.dims[k];
  }
  return true;
}

template <BinaryOp Op>
void binary(const float *a, const float *b, float *y, const StridedDesc &d, cudaStream_t s) {
  if (isFlat(d))
    binaryFlatKernel<Op><<<gridFor(d.count), kThreads, 0, s>>>(a, b, y, d.count);
  else
    binaryStridedKernel<Op><<<gridFor(d.count), kThreads, 0, s>>>(a, b, y, d);
}

template <UnaryOp Op>
void unary(const float *x, float *y, int64_t n, float alpha, cudaStream_t s) {
  unaryKernel<Op><<<gridFor(n), kThreads, 0, s>>>(x, y, n, alpha);
}

} // namespace

void launchUnary(UnaryOp op, const float *x, float *y, int64_t n, float alpha,
                 cudaStream_t stream) {
  if (n == 0) return;
  switch (op) {
  case UnaryOp::Neg: return unary<UnaryOp::Neg>(x, y, n, alpha, stream);
  case UnaryOp::Scale: return unary<UnaryOp::Scale>(x, y, n, alpha, stream);
  case UnaryOp::Relu: return unary<UnaryOp::Relu>(x, y, n, alpha, stream);
  case UnaryOp::Sigmoid: return unary<UnaryOp::Sigmoid>(x, y, n, alpha, stream);
  case UnaryOp::Tanh: return unary<UnaryOp::Tanh>(x, y, n, alpha, stream);
  case UnaryOp::Gelu: return unary<UnaryOp::Gelu>(x, y, n, alpha, stream);
  case UnaryOp::Exp: return unary<UnaryOp::Exp>(x, y, n, alpha, stream);
  case UnaryOp::Log: return unary<UnaryOp::Log>(x, y, n, alpha, stream);
  }
}

void launchBinary(BinaryOp op, const float *a, const float *b, float *y, const StridedDesc &d,
                  cudaStream_t stream) {
  if (d.count == 0) return;
  switch (op) {
  case BinaryOp::Add: return binary<BinaryOp::Add>(a, b, y, d, stream);
  case BinaryOp::Sub: return binary<BinaryOp::Sub>(a, b, y, d, stream);
  case BinaryOp::Mul: return binary<BinaryOp::Mul>(a, b, y, d, stream);
  case BinaryOp::Div: return binary<BinaryOp::Div>(a, b, y, d, stream);
  case BinaryOp::ReluGrad: return binary<BinaryOp::ReluGrad>(a, b, y, d, stream);
  case BinaryOp::GeluGrad: return binary<BinaryOp::GeluGrad>(a, b, y, d, stream);
  case BinaryOp::TanhGrad: return binary<BinaryOp::TanhGrad>(a, b, y, d, stream);
  case BinaryOp::SigmoidGrad: return binary<BinaryOp::SigmoidGrad>(a, b, y, d, stream);
  }
}

void launchGather(const uint32_t *x, uint32_t *y, const StridedDesc &d, cudaStream_t stream) {
  if (d.count == 0) return;
  gatherKernel<<<gridFor(d.count), kThreads, 0, stream>>>(x, y, d);
}

void launchFill(float *y, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  fillKernel<<<gridFor(n), kThreads, 0, stream>>>(y, n, value);
}

} // namespace mpc::runtime::cuda
