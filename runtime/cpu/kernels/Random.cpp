//===- runtime/cpu/kernels/Random.cpp - dropout -------------------------===//
//
// The mask is drawn per element from the counter-based generator of
// support/Philox.h, keyed by the plan's seed and the instruction's `key`, at
// the running step, so it matches the reference interpreter's and the CUDA
// kernel's bit for bit (see ir/ops/Random.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/VectorMath.h"

#include "support/Philox.h"

namespace mpc::runtime::cpu {

namespace {

// ints = {key word 0, key word 1, threshold, offset}; scalar = 1 / (1 - p).
void prepareDropout(KernelInstance &k) {
  const double p = attrFloat(k.attrMap(), "p"); // in [0, 1): proven by the plan verifier
  const philox::Key key =
      philox::dropoutKey(k.seed, philox::nameHash(attrString(k.attrMap(), "key")));
  k.ints = {key.k0, key.k1, philox::dropThreshold(p), attrInt(k.attrMap(), "offset")};
  k.scalar = 1.0 / (1.0 - p);
}

void runDropout(const KernelInstance &k) {
  const philox::Key key{uint32_t(k.ints[0]), uint32_t(k.ints[1])};
  const uint32_t threshold = uint32_t(k.ints[2]);
  const uint64_t offset = uint64_t(k.ints[3]), step = uint64_t(k.step ? *k.step : 1);
  const float scale = float(k.scalar);
  const float *x = k.in[0].f();
  float *o = k.out.f();
  vmath::dropoutLoop(x, o, k.out.numel, key.k0, key.k1, step, offset, threshold, scale);
}

} // namespace

namespace kernels::Random {
const CpuKernel Dropout{prepareDropout, runDropout};
} // namespace kernels::Random

} // namespace mpc::runtime::cpu
