//===- ir/Init.cpp - initial values of parameters and state -------------===//
//
// The random stream of a tensor is xoshiro256** seeded through splitmix64
// from FNV-1a(name) mixed with the global seed. Uniform variates take the top
// 53 bits of a draw as a double in [0, 1); normal variates use Box-Muller,
// consuming two uniforms per pair of values (cos first, then sin). Every step
// is written out here rather than taken from <random>, whose distributions
// differ between standard libraries: the values must not depend on the
// toolchain that compiled mpc.
//
//===----------------------------------------------------------------------===//
#include "ir/Init.h"

#include "support/Error.h"
#include "support/Hash.h"

#include <cmath>

namespace mpc::ir {

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// xoshiro256** (Blackman and Vigna), seeded by splitmix64.
class Rng {
public:
  explicit Rng(uint64_t seed) {
    for (uint64_t &w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

uint64_t streamSeed(const std::string &name, uint64_t seed) {
  uint64_t mixed = seed;
  return fnv1a64(name) ^ splitmix64(mixed);
}

} // namespace

std::vector<float> initialValues(const InitSpec &init, const Shape &shape,
                                 const std::string &name, uint64_t seed) {
  std::optional<int64_t> count = checkedNumElements(shape);
  MPC_ASSERT(count.has_value(), "initialValues on an unchecked shape");
  size_t n = size_t(*count);
  std::vector<float> out(n);
  Rng rng(streamSeed(name, seed));
  switch (init.kind) {
  case InitSpec::Constant:
    for (float &v : out) v = float(init.a);
    break;
  case InitSpec::Zeros:
    for (float &v : out) v = 0.0f;
    break;
  case InitSpec::Ones:
    for (float &v : out) v = 1.0f;
    break;
  case InitSpec::Uniform:
    for (float &v : out) v = float(init.a + (init.b - init.a) * rng.uniform());
    break;
  case InitSpec::Normal: {
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (size_t i = 0; i < n; i += 2) {
      double u1 = 1.0 - rng.uniform(); // (0, 1]: log(u1) is finite
      double u2 = rng.uniform();
      double r = std::sqrt(-2.0 * std::log(u1));
      out[i] = float(init.a + init.b * r * std::cos(kTwoPi * u2));
      if (i + 1 < n) out[i + 1] = float(init.a + init.b * r * std::sin(kTwoPi * u2));
    }
    break;
  }
  case InitSpec::Xavier: {
    double fanIn = 1, fanOut = 1;
    if (shape.size() == 1) {
      fanIn = fanOut = double(shape[0]);
    } else if (shape.size() >= 2) {
      double rest = 1;
      for (size_t i = 2; i < shape.size(); ++i) rest *= double(shape[i]);
      fanIn = double(shape[1]) * rest;
      fanOut = double(shape[0]) * rest;
    }
    double avg = (fanIn + fanOut) / 2.0;
    double s = avg > 0 ? std::sqrt(init.a / avg) : 0.0;
    for (float &v : out) v = float(-s + 2.0 * s * rng.uniform());
    break;
  }
  }
  return out;
}

} // namespace mpc::ir
