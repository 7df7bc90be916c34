//===- runtime/cpu/kernels/VectorMath.cpp - the activation loops ---------===//
//
// Compiled with the loop vectoriser's full cost model (-O3 for this file,
// see runtime/CMakeLists.txt); on x86-64 each loop also gets an
// x86-64-v3 clone (AVX2, FMA) that the loader picks on CPUs that have it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/kernels/VectorMath.h"

#include "support/Philox.h"

#include <algorithm>

// Not under ThreadSanitizer: GCC instruments the clones' ifunc resolvers
// (__tsan_func_entry), and the loader runs them while relocating, before the
// sanitizer's runtime is set up, so the program crashes before main.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
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

MPC_SIMD_CLONES void geluLoop(const float *x, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fastGelu(x[i]);
}

MPC_SIMD_CLONES void geluGradLoop(const float *x, const float *dy, float *o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = dy[i] * fastGeluDeriv(x[i]);
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

/// dropout's mask, eight Philox blocks (32 elements) at a time: the rounds
/// run over the eight counters as arrays, which the vectoriser turns into
/// 32x32->64-bit vector multiplies, and the words are laid out in element
/// order for the final select. Partial blocks at either end go one by one.
MPC_SIMD_CLONES void dropoutLoop(const float *x, float *o, int64_t n, uint32_t k0, uint32_t k1,
                                 uint64_t step, uint64_t offset, uint32_t threshold,
                                 float scale) {
  const philox::Key key{k0, k1};
  int64_t i = 0;
  auto one = [&](int64_t upTo) { // elements i .. upTo-1 through single blocks
    while (i < upTo) {
      const uint64_t index = offset + uint64_t(i);
      const philox::Block b = philox::dropoutBlock(key, step, index >> 2);
      for (uint64_t w = index & 3; w < 4 && i < upTo; ++w, ++i)
        o[i] = b.w[w] >= threshold ? x[i] * scale : 0.f;
    }
  };
  one(std::min<int64_t>(n, int64_t((4 - (offset & 3)) & 3)));
  constexpr int kLanes = 8;
  using philox::kM0, philox::kM1, philox::kW0, philox::kW1;
  // Four counters per vector, each 32-bit word zero-extended in a 64-bit
  // lane, so that the 32x32->64-bit products are one vector multiply.
  typedef uint64_t V __attribute__((vector_size(32)));
  const V lo32 = {0xFFFFFFFFull, 0xFFFFFFFFull, 0xFFFFFFFFull, 0xFFFFFFFFull};
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const uint64_t first = (offset + uint64_t(i)) >> 2;
    uint32_t words[4 * kLanes];
    for (int h = 0; h < kLanes / 4; ++h) {
      V c0, c1, c2, c3;
      for (int l = 0; l < 4; ++l) {
        const uint64_t b = first + uint64_t(4 * h + l);
        c0[l] = uint32_t(b);
        c1[l] = uint32_t(b >> 32);
        c2[l] = uint32_t(step);
        c3[l] = uint32_t(step >> 32);
      }
      uint32_t r0 = k0, r1 = k1;
      for (int round = 0; round < philox::kRounds; ++round) {
        const V p0 = c0 * kM0, p1 = c2 * kM1;
        const V n0 = (p1 >> 32) ^ c1 ^ r0;
        const V n2 = (p0 >> 32) ^ c3 ^ r1;
        c1 = p1 & lo32;
        c3 = p0 & lo32;
        c0 = n0;
        c2 = n2;
        r0 += kW0;
        r1 += kW1;
      }
      for (int l = 0; l < 4; ++l) {
        words[16 * h + 4 * l] = uint32_t(c0[l]);
        words[16 * h + 4 * l + 1] = uint32_t(c1[l]);
        words[16 * h + 4 * l + 2] = uint32_t(c2[l]);
        words[16 * h + 4 * l + 3] = uint32_t(c3[l]);
      }
    }
    for (int e = 0; e < 4 * kLanes; ++e)
      o[i + e] = words[e] >= threshold ? x[i + e] * scale : 0.f;
  }
  one(n);
}

} // namespace mpc::runtime::cpu::vmath
