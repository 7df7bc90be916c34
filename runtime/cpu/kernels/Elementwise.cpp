//===- runtime/cpu/kernels/Elementwise.cpp - pointwise CPU kernels ------===//
//
// add sub mul div (NumPy broadcasting over the output buffer's shape), the
// unary activations, and the backward ops relu_grad and gelu_grad. Binary
// kernels pick a loop at load: equal shapes and a scalar operand are flat
// loops; anything else walks rows with per-operand broadcast strides.
// The transcendental activations (exp, log, tanh, sigmoid, gelu in both
// forms, and their fused backward ops) run as vectorised float loops
// (VectorMath.h states each one's accuracy in ulps).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/Loops.h"
#include "runtime/cpu/kernels/VectorMath.h"
#include "ops/Float16.h"

#include <algorithm>
#include <cmath>

namespace mpc::runtime::cpu {

namespace {

// kRowB: b is the trailing ints[1] elements of the result's shape, repeated
// over the leading axes (a bias add), so each row runs without index math.
enum BinaryMode : int64_t { kSame = 0, kScalarB = 1, kScalarA = 2, kGeneral = 3, kRowB = 4 };

/// True when `shape` equals the trailing dimensions of `out`.
bool isTrailingOf(const std::vector<int64_t> &shape, const std::vector<int64_t> &out) {
  if (shape.size() > out.size()) return false;
  return std::equal(shape.begin(), shape.end(), out.end() - std::ptrdiff_t(shape.size()));
}

void prepareBinary(KernelInstance &k) {
  k.strides = {broadcastStrides(k.in[0].shape, k.out.shape),
               broadcastStrides(k.in[1].shape, k.out.shape)};
  k.ints = {kGeneral, 0};
  if (k.in[0].numel == k.out.numel && k.in[1].numel == k.out.numel) k.ints[0] = kSame;
  else if (k.in[0].numel == k.out.numel && k.in[1].numel == 1) k.ints[0] = kScalarB;
  else if (k.in[1].numel == k.out.numel && k.in[0].numel == 1) k.ints[0] = kScalarA;
  else if (k.in[0].numel == k.out.numel && k.in[1].numel > 0 &&
           isTrailingOf(k.in[1].shape, k.out.shape))
    k.ints = {kRowB, k.in[1].numel};
}

template <class F> void runBinary(const KernelInstance &k) {
  F f;
  const float *a = k.in[0].f(), *b = k.in[1].f();
  float *o = k.out.f();
  int64_t n = k.out.numel;
  switch (k.ints[0]) {
  case kSame:
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
    return;
  case kScalarB: {
    float s = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], s);
    return;
  }
  case kScalarA: {
    float s = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(s, b[i]);
    return;
  }
  case kRowB: {
    const int64_t d = k.ints[1];
    for (int64_t r = 0; r < n; r += d)
      for (int64_t j = 0; j < d; ++j) o[r + j] = f(a[r + j], b[j]);
    return;
  }
  default:
    forEachRow<2>(k.out.shape, {&k.strides[0], &k.strides[1]},
                  [&](int64_t out, const std::array<int64_t, 2> &off, int64_t len,
                      const std::array<int64_t, 2> &st) {
                    const float *pa = a + off[0], *pb = b + off[1];
                    float *po = o + out;
                    if (st[0] == 1 && st[1] == 1)
                      for (int64_t j = 0; j < len; ++j) po[j] = f(pa[j], pb[j]);
                    else if (st[0] == 1 && st[1] == 0)
                      for (int64_t j = 0; j < len; ++j) po[j] = f(pa[j], pb[0]);
                    else
                      for (int64_t j = 0; j < len; ++j) po[j] = f(pa[j * st[0]], pb[j * st[1]]);
                  });
  }
}

struct AddF { float operator()(float a, float b) const { return a + b; } };
struct SubF { float operator()(float a, float b) const { return a - b; } };
struct MulF { float operator()(float a, float b) const { return a * b; } };
struct DivF { float operator()(float a, float b) const { return a / b; } };

template <class F> void runUnary(const KernelInstance &k) {
  F f;
  const float *x = k.in[0].f();
  float *o = k.out.f();
  int64_t n = k.out.numel;
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

struct NegF { float operator()(float x) const { return -x; } };
struct ReluF { float operator()(float x) const { return x > 0 ? x : 0.0f; } };
/// The transcendental activations run as vectorised float loops
/// (VectorMath.h, with their accuracy in ulps).
template <void (*Loop)(const float *, float *, int64_t)> void runVector(const KernelInstance &k) {
  Loop(k.in[0].f(), k.out.f(), k.out.numel);
}
template <void (*Loop)(const float *, const float *, float *, int64_t)>
void runVector2(const KernelInstance &k) {
  Loop(k.in[0].f(), k.in[1].f(), k.out.f(), k.out.numel);
}
// gelu's and gelu_grad's `approximate` (the verifier proved it is "none" or
// "tanh"): ints[0] = 0 for "none" (erf), 1 for "tanh" (GPT-2's
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).
void prepareGelu(KernelInstance &k) {
  k.ints = {attrString(k.attrMap(), "approximate") == "tanh" ? 1 : 0};
}

constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCubic = 0.044715f;
/// The tanh form runs through the vectorised tanh in blocks: the argument
/// into a stack buffer, tanh in place, then the combination (so the result
/// may alias x).
constexpr int64_t kGeluBlock = 256;

template <class Combine>
void geluTanhBlocks(const float *x, int64_t n, Combine combine) {
  float t[kGeluBlock];
  for (int64_t b = 0; b < n; b += kGeluBlock) {
    const int64_t len = std::min(kGeluBlock, n - b);
    for (int64_t i = 0; i < len; ++i) {
      const float v = x[b + i];
      t[i] = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    }
    vmath::tanhLoop(t, t, len);
    for (int64_t i = 0; i < len; ++i) combine(b + i, x[b + i], t[i]);
  }
}

void runGelu(const KernelInstance &k) {
  if (k.ints[0] == 0) return vmath::geluLoop(k.in[0].f(), k.out.f(), k.out.numel);
  float *o = k.out.f();
  geluTanhBlocks(k.in[0].f(), k.out.numel,
                 [o](int64_t i, float x, float t) { o[i] = 0.5f * x * (1.f + t); });
}

void prepareScale(KernelInstance &k) {
  k.scalar = attrFloat(k.attrMap(), "value");
}

void runScale(const KernelInstance &k) {
  const float *x = k.in[0].f();
  float *o = k.out.f();
  float v = float(k.scalar);
  for (int64_t i = 0; i < k.out.numel; ++i) o[i] = v * x[i];
}

void runReluGrad(const KernelInstance &k) {
  const float *x = k.in[0].f(), *dy = k.in[1].f();
  float *o = k.out.f();
  for (int64_t i = 0; i < k.out.numel; ++i) o[i] = x[i] > 0 ? dy[i] : 0.0f;
}

void runGeluGrad(const KernelInstance &k) {
  const float *x = k.in[0].f(), *dy = k.in[1].f();
  float *o = k.out.f();
  if (k.ints[0] == 1) {
    // d/dx 0.5 x (1 + t) = 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x).
    geluTanhBlocks(x, k.out.numel, [o, dy](int64_t i, float v, float t) {
      const float du = kSqrt2OverPi * (1.f + 3.f * kGeluCubic * v * v);
      o[i] = dy[i] * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * du);
    });
    return;
  }
  vmath::geluGradLoop(x, dy, o, k.out.numel);
}

/// cast: the one kernel that reads and writes its buffers' own float types
/// (the device widens low-precision operands of every other op:
/// runtime/cpu/LowPrecision.h).
void runCast(const KernelInstance &k) {
  const plan::DType from = k.in[0].dtype, to = k.out.dtype;
  const void *x = k.in[0].data;
  void *y = k.out.data;
  for (int64_t i = 0; i < k.out.numel; ++i) ops::storeFloat(to, y, i, ops::loadFloat(from, x, i));
}

} // namespace

namespace kernels::Elementwise {
const CpuKernel Cast{nullptr, runCast};
const CpuKernel Add{prepareBinary, runBinary<AddF>};
const CpuKernel Sub{prepareBinary, runBinary<SubF>};
const CpuKernel Mul{prepareBinary, runBinary<MulF>};
const CpuKernel Div{prepareBinary, runBinary<DivF>};
const CpuKernel Neg{nullptr, runUnary<NegF>};
const CpuKernel Scale{prepareScale, runScale};
const CpuKernel Relu{nullptr, runUnary<ReluF>};
const CpuKernel Sigmoid{nullptr, runVector<vmath::sigmoidLoop>};
const CpuKernel Tanh{nullptr, runVector<vmath::tanhLoop>};
const CpuKernel Gelu{prepareGelu, runGelu};
const CpuKernel Exp{nullptr, runVector<vmath::expLoop>};
const CpuKernel Log{nullptr, runVector<vmath::logLoop>};
const CpuKernel ReluGrad{nullptr, runReluGrad};
const CpuKernel GeluGrad{prepareGelu, runGeluGrad};
const CpuKernel TanhGrad{nullptr, runVector2<vmath::tanhGradLoop>};
const CpuKernel SigmoidGrad{nullptr, runVector2<vmath::sigmoidGradLoop>};
} // namespace kernels::Elementwise

} // namespace mpc::runtime::cpu
