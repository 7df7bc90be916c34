//===- support/Philox.h - the counter-based generator of dropout ---------===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a keyed bijection of a 128-bit counter, so the random number
// of any (key, counter) is computed on its own, in any order, on any device.
// That is what makes a dropout mask a pure function of (plan seed, node,
// step, element index): the reference interpreter, the CPU kernel and the
// CUDA kernel all call dropoutKeep() below and agree bit for bit, whatever
// the placement, the number of devices or the micro-batching.
//
// Header-only, integer arithmetic only, and usable from CUDA device code
// (compiled by nvcc as C++17).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Hash.h"

#include <cstdint>
#include <string_view>

#if defined(__CUDACC__)
#define MPC_HOST_DEVICE __host__ __device__
#else
#define MPC_HOST_DEVICE
#endif

namespace mpc::philox {

struct Key {
  uint32_t k0 = 0, k1 = 0;
};

/// The round multipliers and the key's Weyl increments of Philox4x32.
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
constexpr int kRounds = 10;

/// The four 32-bit words of Philox4x32-10 of counter (c0, c1, c2, c3).
struct Block {
  uint32_t w[4];
};

MPC_HOST_DEVICE inline Block block(Key key, uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3) {
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c0 = hi1 ^ c1 ^ key.k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ key.k1;
    c3 = lo0;
    key.k0 += kW0;
    key.k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

/// The words of elements 4b .. 4b+3 at `step`: the block of counter
/// (b, step). Each Philox call serves four consecutive elements.
MPC_HOST_DEVICE inline Block dropoutBlock(Key key, uint64_t step, uint64_t b) {
  return block(key, uint32_t(b), uint32_t(b >> 32), uint32_t(step), uint32_t(step >> 32));
}

/// 64-bit FNV-1a of a node name: the part of the key that tells dropout
/// nodes apart.
inline uint64_t nameHash(std::string_view name) { return fnv1a64(name); }

/// The key of a dropout node: the plan seed mixed with the node's name hash.
inline Key dropoutKey(uint64_t seed, uint64_t nameHash) {
  const uint64_t k = seed * 0x9E3779B97F4A7C15ull ^ nameHash;
  return {uint32_t(k), uint32_t(k >> 32)};
}

/// Whether element `index` (of the whole batch) survives at training step
/// `step`: its uniform 32-bit word (word index % 4 of the block index / 4)
/// against the threshold p * 2^32 (dropThreshold).
MPC_HOST_DEVICE inline bool dropoutKeep(Key key, uint64_t step, uint64_t index,
                                        uint32_t threshold) {
  return dropoutBlock(key, step, index >> 2).w[index & 3] >= threshold;
}

/// p in [0, 1) as the 32-bit threshold below which an element is dropped.
inline uint32_t dropThreshold(double p) {
  const double t = p * 4294967296.0;
  return t >= 4294967295.0 ? 0xFFFFFFFFu : uint32_t(t);
}

} // namespace mpc::philox
