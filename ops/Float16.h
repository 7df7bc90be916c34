//===- ops/Float16.h - the two-byte float types' bits ---------------------===//
//
// Conversions between f32 and the storage of bf16 (the top half of an f32)
// and f16 (IEEE 754 binary16), rounding to nearest, ties to even, as
// PyTorch's .to(torch.bfloat16 / torch.float16), cuBLAS and CUDA's
// __float2bfloat16_rn / __float2half_rn do. NaN stays NaN (quiet), values
// beyond the largest finite f16 become infinities, f16 subnormals are kept.
// Every backend and the reference interpreter round through these, so a
// bf16 value has one bit pattern wherever it is computed. C++17 and
// header-only: CUDA host code includes it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/DType.h"

#include <cstdint>
#include <cstring>

namespace mpc::ops {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// f32 -> bf16 bits, nearest-even.
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u); // NaN, quiet
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16ToFloat(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

/// f32 -> f16 bits, nearest-even; overflow gives an infinity.
inline uint16_t floatToF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);         // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);        // >= 65520: inf
  if (a < 0x38800000u) {                                        // below 2^-14: subnormal
    if (a < 0x33000000u) return sign;                           // below 2^-25: zero
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - int(a >> 23);                             // 14..24 + 1
    uint32_t rounded = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (rounded & 1u))) ++rounded;
    return uint16_t(sign | rounded);
  }
  uint32_t r = a - 0x38000000u; // rebias 127 -> 15 in place
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bitsFloat(sign | 0x7f800000u | (m << 13)); // inf, NaN
  if (e == 0) {
    if (m == 0) return bitsFloat(sign);
    float v = float(m) * (1.0f / 16777216.0f); // m * 2^-24
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((e + 112u) << 23) | (m << 13));
}

/// The value `f` becomes when stored as `t` (f32 and i32: unchanged).
inline float roundTo(DType t, float f) {
  switch (t) {
  case DType::BF16: return bf16ToFloat(floatToBf16(f));
  case DType::F16: return f16ToFloat(floatToF16(f));
  default: return f;
  }
}

/// Element i of a float buffer of type `t` (f32, bf16 or f16), as f32.
inline float loadFloat(DType t, const void *data, int64_t i) {
  if (t == DType::F32) return static_cast<const float *>(data)[i];
  uint16_t h = static_cast<const uint16_t *>(data)[i];
  return t == DType::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
}

/// Stores `f` as element i of a float buffer of type `t`, rounding.
inline void storeFloat(DType t, void *data, int64_t i, float f) {
  if (t == DType::F32) static_cast<float *>(data)[i] = f;
  else static_cast<uint16_t *>(data)[i] = t == DType::BF16 ? floatToBf16(f) : floatToF16(f);
}

} // namespace mpc::ops
