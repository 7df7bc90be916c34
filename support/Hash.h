//===- support/Hash.h - FNV-1a 64 ---------------------------------------===//
//
// The one hash of names and bytes: dropout keys (support/Philox.h), initial
// values (ir/Init.cpp), the plan file's checksum (plan/PlanWriter.cpp) and
// a model's computation checksum (ir/ModelChecksum.h). Stable across hosts
// and versions: files record its values. Header-only C++17.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mpc {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

/// FNV-1a 64 of `size` bytes, continuing from `h` (kFnvOffset to start).
inline uint64_t fnv1a64(const void *data, size_t size, uint64_t h = kFnvOffset) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

inline uint64_t fnv1a64(std::string_view s, uint64_t h = kFnvOffset) {
  return fnv1a64(s.data(), s.size(), h);
}

} // namespace mpc
