//===- runtime/cpu/kernels/VectorMath.h - float exp, log, tanh, sigmoid -===//
//
// Elementwise activations go through libm in double, one call per element,
// which kept them correctly rounded and made tanh alone about 15% of an MLP
// step. These are float versions written without branches or calls (the
// special cases are selected at the end), so a loop over them compiles to
// SIMD code: 8 lanes with AVX2 and FMA where the CPU has them (the kernels
// that use them are cloned per target, see Elementwise.cpp), 4 with SSE2
// otherwise.
//
// Accuracy, measured against the correctly rounded result over every
// 7th float in the functions' interesting ranges (test/unit/runtime/
// VectorMathTest.cpp, which also fixes the bounds):
//   fastExp      <= 1 ulp     (Cephes' expf: 2^n times a degree-6 polynomial)
//   fastLog      <= 1 ulp     (Cephes' logf: a degree-8 polynomial in the mantissa)
//   fastTanh     <= 2 ulp     (odd polynomial below 0.625, 1 - 2/(e^2x + 1) above)
//   fastSigmoid  <= 2 ulp     (1 / (1 + e^-x))
//   fastGelu     <= 8 ulp     (x Phi(x), with Phi's tail from a fitted erfc
//                              and e^(-x^2/2) formed without rounding x^2;
//                              measured 7 over [-13, 20], against libm's
//                              erfc in double)
// and exact at the special values: +-0, +-inf, NaN, the limits of overflow.
// Results do not depend on the vector width: every lane computes the same
// operations in the same order, so a build with and without AVX2 agree
// except where the compiler fuses a multiply and an add (FMA), which only
// the per-target clones may do; within one binary on one machine results
// are deterministic.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Float16.h"

#include <cstdint>
#include <limits>

namespace mpc::runtime::cpu::vmath {

// A float's bits and back (ops/Float16.h).
using ops::bitsFloat;
using ops::floatBits;

/// e^x. Overflows to +inf above 88.72, underflows to 0 below -103.9
/// (denormals in between, as libm).
inline float fastExp(float x) {
  const float hi = 88.72283935546875f, lo = -103.972084045410f;
  float xc = x < lo ? lo : (x > hi ? hi : x);
  // n = round(x / ln 2) (adding and taking away 1.5 * 2^23 rounds to an
  // integer without a call or an SSE4 instruction); r = x - n ln 2 in two
  // pieces (Cody-Waite).
  const float round = 12582912.0f;
  float n = (xc * 1.44269504088896341f + round) - round;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // p * 2^n, in two halves so that n down to -150 (denormal results) and
  // up to 128 stay representable.
  int32_t ni = int32_t(n);
  int32_t n1 = ni / 2, n2 = ni - n1;
  float s1 = bitsFloat(uint32_t(n1 + 127) << 23), s2 = bitsFloat(uint32_t(n2 + 127) << 23);
  float y = p * s1 * s2;
  y = x > hi ? std::numeric_limits<float>::infinity() : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

/// Natural log. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
inline float fastLog(float x) {
  // Denormals: scale up by 2^23 first.
  bool tiny = x < 1.17549435e-38f;
  float xs = tiny ? x * 8388608.0f : x;
  uint32_t u = floatBits(xs);
  int32_t e = int32_t((u >> 23) & 0xff) - 126;
  float m = bitsFloat((u & 0x007fffffu) | 0x3f000000u); // in [0.5, 1)
  // Keep m in [sqrt(0.5), sqrt(2)): below, take one from the exponent.
  bool below = m < 0.707106781186547524f;
  m = below ? m + m : m;
  e = below ? e - 1 : e;
  float fe = float(e) - (tiny ? 23.0f : 0.0f);
  float f = m - 1.0f;
  float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * z;
  y += fe * -2.12194440e-4f;
  y += -0.5f * z;
  y = f + y;
  y += fe * 0.693359375f;
  const float inf = std::numeric_limits<float>::infinity();
  y = x == inf ? inf : y;
  y = x == 0.0f ? -inf : y;
  y = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : y;
  return x != x ? x : y;
}

/// tanh. Exactly +-1 beyond |x| = 9.1 (the float nearest tanh there).
inline float fastTanh(float x) {
  float ax = x < 0 ? -x : x;
  // Small |x|: x + x^3 P(x^2) (Cephes' tanhf).
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = x + x * z * p;
  // Larger |x|: 1 - 2 / (e^(2|x|) + 1), with the sign of x.
  float axc = ax > 9.1f ? 9.1f : ax;
  float big = 1.0f - 2.0f / (fastExp(axc + axc) + 1.0f);
  big = ax > 9.1f ? 1.0f : big;
  big = x < 0 ? -big : big;
  float y = ax < 0.625f ? small : big;
  y = x == 0.0f ? x : y; // keeps the sign of zero
  return x != x ? x : y;
}

/// 1 / (1 + e^-x).
inline float fastSigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }

/// The normal tail Phi(-a) = erfc(a / sqrt 2) / 2 for a >= 0, with erfc(z) =
/// t e^(-z^2 + P(t)), t = 1 / (1 + z/2): the Chebyshev fit of Numerical
/// Recipes' erfcc (relative error below 1.2e-7 in exact arithmetic),
/// evaluated in float. z^2 = a^2 / 2 is formed from a, not from a rounded z
/// (whose error would cost up to 30 ulps near a = 4): a = ah + al with ah's
/// low 12 mantissa bits cleared, so ah^2 is exact, and
/// e^(-z^2 + P) = e^(-ah^2 / 2) e^(P - ah al - al^2 / 2).
inline float fastNormalTail(float a) {
  const float z = a * 0.70710678118654752f;
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float ah = bitsFloat(floatBits(a) & 0xFFFFF000u), al = a - ah;
  return 0.5f * t * fastExp(-0.5f * ah * ah) * fastExp(p - (ah * al + 0.5f * al * al));
}

/// Phi(x), the standard normal CDF: the tail for x < 0 and one minus it
/// above, so the small tail keeps its relative accuracy.
inline float fastNormalCdf(float x) {
  // Past 20 the tail is 0 in float; the clamp keeps a = inf from making
  // inf - inf in the split (so gelu(inf) = inf, as libm's formula gives).
  float a = x < 0.0f ? -x : x;
  a = a > 20.0f ? 20.0f : a;
  const float tail = fastNormalTail(a);
  return x < 0.0f ? tail : 1.0f - tail;
}

/// gelu(x) = x Phi(x) (the exact, erf form).
inline float fastGelu(float x) { return x * fastNormalCdf(x); }

/// d/dx gelu(x) = Phi(x) + x phi(x), phi the standard normal density.
inline float fastGeluDeriv(float x) {
  return fastNormalCdf(x) + x * 0.39894228040143267794f * fastExp(-0.5f * x * x);
}

} // namespace mpc::runtime::cpu::vmath

namespace mpc::runtime::cpu::vmath {

/// o[i] = f(x[i]) for i < n, vectorised (VectorMath.cpp is compiled for
/// SIMD, with an AVX2+FMA clone picked at load where the CPU has it). `o`
/// may be `x` (in place).
void expLoop(const float *x, float *o, int64_t n);
void logLoop(const float *x, float *o, int64_t n);
void tanhLoop(const float *x, float *o, int64_t n);
/// gelu, erf form (fastGelu), and its backward: o[i] = dy[i] * gelu'(x[i]).
void geluLoop(const float *x, float *o, int64_t n);
void geluGradLoop(const float *x, const float *dy, float *o, int64_t n);
/// dropout: o[i] = x[i] * scale where element offset + i survives (the
/// Philox mask of support/Philox.h with key (k0, k1) at `step`), else 0.
void dropoutLoop(const float *x, float *o, int64_t n, uint32_t k0, uint32_t k1, uint64_t step,
                 uint64_t offset, uint32_t threshold, float scale);
void sigmoidLoop(const float *x, float *o, int64_t n);

/// The fused backward of the activations, from their results y: one pass
/// instead of three. o may be y or dy.
///   tanhGradLoop:    o = dy * (1 - y * y)
///   sigmoidGradLoop: o = dy * (y * (1 - y))
void tanhGradLoop(const float *y, const float *dy, float *o, int64_t n);
void sigmoidGradLoop(const float *y, const float *dy, float *o, int64_t n);

} // namespace mpc::runtime::cpu::vmath
