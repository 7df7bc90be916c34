//===- runtime/cuda/kernels/Elementwise.cu - pointwise ops, gather, fill -===//
//
// The whole CUDA side of the Elementwise family, host records included, so
// that adding a pointwise op is one functor and one record line here. Each
// op is a functor with a __device__ call operator: unary ops take (x, alpha),
// alpha being an attribute read at load (scale's value); binary ops take
// (a, b) and broadcast NumPy style through a StridedDesc whose broadcast
// dims have stride 0, with a flat fast path for equal shapes. An attribute
// that selects the formula (gelu's `approximate`) picks the functor in a
// prepare function, so the device code has no branch on it. gather serves
// transpose and broadcast_to (a strided read, contiguous write). The math
// follows the reference kernels in float32.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/kernels/Convert.h"
#include "runtime/cuda/kernels/Descriptors.h"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCubic = 0.044715f;

// ---- the ops ---------------------------------------------------------------

struct NegF {
  __device__ float operator()(float x, float) const { return -x; }
};
struct ScaleF {
  __device__ float operator()(float x, float alpha) const { return alpha * x; }
};
struct ReluF {
  __device__ float operator()(float x, float) const { return x > 0.f ? x : 0.f; }
};
struct SigmoidF {
  __device__ float operator()(float x, float) const { return 1.f / (1.f + expf(-x)); }
};
struct TanhF {
  __device__ float operator()(float x, float) const { return tanhf(x); }
};
struct GeluF {
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.f + erff(x * kInvSqrt2));
  }
};
struct GeluTanhF { // approximate "tanh"
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  }
};
struct ExpF {
  __device__ float operator()(float x, float) const { return expf(x); }
};
struct LogF {
  __device__ float operator()(float x, float) const { return logf(x); }
};

struct AddF {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct SubF {
  __device__ float operator()(float a, float b) const { return a - b; }
};
struct MulF {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct DivF {
  __device__ float operator()(float a, float b) const { return a / b; }
};
struct ReluGradF { // a = x, b = dy
  __device__ float operator()(float a, float b) const { return a > 0.f ? b : 0.f; }
};
struct GeluGradF { // a = x, b = dy
  __device__ float operator()(float a, float b) const {
    float cdf = 0.5f * (1.f + erff(a * kInvSqrt2));
    return b * (cdf + a * kInvSqrt2Pi * expf(-0.5f * a * a));
  }
};
struct GeluTanhGradF { // a = x, b = dy; the derivative of GeluTanhF
  __device__ float operator()(float a, float b) const {
    float t = tanhf(kSqrt2OverPi * (a + kGeluCubic * a * a * a));
    float du = kSqrt2OverPi * (1.f + 3.f * kGeluCubic * a * a);
    return b * (0.5f * (1.f + t) + 0.5f * a * (1.f - t * t) * du);
  }
};
struct TanhGradF { // a = y, b = dy
  __device__ float operator()(float a, float b) const { return b * (1.f - a * a); }
};
struct SigmoidGradF { // a = y, b = dy
  __device__ float operator()(float a, float b) const { return b * (a * (1.f - a)); }
};

// ---- device loops ------------------------------------------------------------
//
// No __restrict__ on the operands or the result: the compiler may let a
// result take over a dying operand's buffer (ir::OpInfo::inPlaceOperands),
// so y may equal x, a or b. Each thread reads element i and then writes
// element i, which is safe when they alias; restrict would make it
// undefined (and allow loads through the non-coherent read-only cache).

template <class F>
__global__ void unaryKernel(const float *x, float *y, int64_t n, float alpha) {
  F f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = f(x[i], alpha);
}

template <class F>
__global__ void binaryFlatKernel(const float *a, const float *b, float *y, int64_t n) {
  F f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = f(a[i], b[i]);
}

template <class F>
__global__ void binaryStridedKernel(const float *a, const float *b, float *y, StridedDesc d) {
  F f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < d.count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oa, ob;
    stridedOffsets(d, i, oa, ob);
    y[i] = f(a[oa], b[ob]);
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

// ---- host side: descriptors at load, launches every step -------------------

/// y = F(x, alpha) elementwise; `alphaAttr` names the float attribute passed
/// as alpha (null: none).
template <class F> Launch unaryLaunch(const KernelOperands &k, const char *alphaAttr) {
  float alpha = alphaAttr ? float(attrFloat(k.instr->attrs, alphaAttr)) : 0.f;
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  int64_t n = k.output->numElements();
  cudaStream_t s = k.ctx.stream;
  return [=] {
    if (n) unaryKernel<F><<<gridFor(n), kThreads, 0, s>>>(x, y, n, alpha);
  };
}
template <class F> Launch prepareUnary(const KernelOperands &k) {
  return unaryLaunch<F>(k, nullptr);
}
Launch prepareScale(const KernelOperands &k) { return unaryLaunch<ScaleF>(k, "value"); }

template <class F> Launch prepareBinary(const KernelOperands &k) {
  StridedDesc d = broadcastDesc(k.output->shape, k.inputs[0]->shape, k.inputs[1]->shape);
  const float *a = cf(k.inPtr[0]), *b = cf(k.inPtr[1]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  bool flat = isFlat(d);
  return [=] {
    if (d.count == 0) return;
    if (flat)
      binaryFlatKernel<F><<<gridFor(d.count), kThreads, 0, s>>>(a, b, y, d.count);
    else
      binaryStridedKernel<F><<<gridFor(d.count), kThreads, 0, s>>>(a, b, y, d);
  };
}

/// gelu and gelu_grad: the form the `approximate` attribute names, "none"
/// (exact, erf) or "tanh" (the only values the plan verifier lets through).
bool geluUsesTanh(const KernelOperands &k) {
  return attrString(k.instr->attrs, "approximate") == "tanh";
}
Launch prepareGelu(const KernelOperands &k) {
  return geluUsesTanh(k) ? prepareUnary<GeluTanhF>(k) : prepareUnary<GeluF>(k);
}
Launch prepareGeluGrad(const KernelOperands &k) {
  return geluUsesTanh(k) ? prepareBinary<GeluTanhGradF>(k) : prepareBinary<GeluGradF>(k);
}

/// cast: converts its buffers' own types (every other kernel sees f32
/// staging copies of bf16 and f16 buffers: CudaDevice).
Launch prepareCast(const KernelOperands &k) {
  const void *x = k.inPtr[0];
  void *y = k.outPtr;
  ops::DType from = k.inputs[0]->dtype, to = k.output->dtype;
  int64_t n = k.output->numElements();
  cudaStream_t s = k.ctx.stream;
  return [=] { launchConvert(x, from, y, to, n, s); };
}

} // namespace

namespace kernels::Elementwise {
const CudaKernel Cast{nullptr, prepareCast, /*lowPrecisionNative=*/true};
const CudaKernel Add{nullptr, prepareBinary<AddF>};
const CudaKernel Sub{nullptr, prepareBinary<SubF>};
const CudaKernel Mul{nullptr, prepareBinary<MulF>};
const CudaKernel Div{nullptr, prepareBinary<DivF>};
const CudaKernel Neg{nullptr, prepareUnary<NegF>};
const CudaKernel Scale{nullptr, prepareScale};
const CudaKernel Relu{nullptr, prepareUnary<ReluF>};
const CudaKernel Sigmoid{nullptr, prepareUnary<SigmoidF>};
const CudaKernel Tanh{nullptr, prepareUnary<TanhF>};
const CudaKernel Gelu{nullptr, prepareGelu};
const CudaKernel Exp{nullptr, prepareUnary<ExpF>};
const CudaKernel Log{nullptr, prepareUnary<LogF>};
const CudaKernel ReluGrad{nullptr, prepareBinary<ReluGradF>};
const CudaKernel GeluGrad{nullptr, prepareGeluGrad};
const CudaKernel TanhGrad{nullptr, prepareBinary<TanhGradF>};
const CudaKernel SigmoidGrad{nullptr, prepareBinary<SigmoidGradF>};
} // namespace kernels::Elementwise

// Shared with the Shape, Reduce, Linalg and Loss families.

void launchGather(const uint32_t *x, uint32_t *y, const StridedDesc &d, cudaStream_t stream) {
  if (d.count == 0) return;
  gatherKernel<<<gridFor(d.count), kThreads, 0, stream>>>(x, y, d);
}

void launchFill(float *y, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  fillKernel<<<gridFor(n), kThreads, 0, stream>>>(y, n, value);
}

} // namespace mpc::runtime::cuda
