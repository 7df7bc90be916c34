//===- runtime/cpu/kernels/VectorMath.cpp - the activation loops ---------===//
//
// Compiled with the loop vectoriser's full cost model (-O3 for this file,
// see runtime/CMakeLists.txt); on x86-64 each loop also gets an
// x86-64-v3 clone (AVX2, FMA) that the loader picks on CPUs that have it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/kernels/VectorMath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MPC_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MPC_SIMD_CLONES
#endif

namespace mpc::runtime::cpu::vmath {

MPC_SIMD_CLONES void expLoop(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fastExp(x[i]);
}

MPC_SIMD_CLONES void logLoop(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fastLog(x[i]);
}

MPC_SIMD_CLONES void tanhLoop(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fastTanh(x[i]);
}

MPC_SIMD_CLONES void sigmoidLoop(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fastSigmoid(x[i]);
}

MPC_SIMD_CLONES void tanhGradLoop(const float *y, const float *dy, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = dy[i] * (1.0f - y[i] * y[i]);
}

MPC_SIMD_CLONES void sigmoidGradLoop(const float *y, const float *dy, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = dy[i] * (y[i] * (1.0f - y[i]));
}

} // namespace mpc::runtime::cpu::vmath
