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

// ints = {key word 0, key word 1, threshold, offset, parts, part, inner};
// scalar = 1 / (1 - p).
void prepareDropout(KernelInstance &k) {
  const double p = attrFloat(k.attrMap(), "p"); // in [0, 1): proven by the plan verifier
  const philox::Key key =
      philox::dropoutKey(k.seed, philox::nameHash(attrString(k.attrMap(), "key")));
  k.ints = {key.k0,
            key.k1,
            philox::dropThreshold(p),
            attrInt(k.attrMap(), "offset"),
            attrInt(k.attrMap(), "parts"),
            attrInt(k.attrMap(), "part"),
            attrInt(k.attrMap(), "inner")};
  k.scalar = 1.0 / (1.0 - p);
}

void runDropout(const KernelInstance &k) {
  const philox::Key key{uint32_t(k.ints[0]), uint32_t(k.ints[1])};
  const uint32_t threshold = uint32_t(k.ints[2]);
  const uint64_t offset = uint64_t(k.ints[3]), step = uint64_t(k.step ? *k.step : 1);
  const float scale = float(k.scalar);
  const float *x = k.in[0].f();
  float *o = k.out.f();
  const int64_t parts = k.ints[4], part = k.ints[5], inner = k.ints[6];
  if (parts == 1) {
    vmath::dropoutLoop(x, o, k.out.numel, key.k0, key.k1, step, offset, threshold, scale);
    return;
  }
  // A part of the whole (tensor parallelism): each run of `inner` elements
  // is contiguous in the whole's element order.
  for (int64_t run = 0; run * inner < k.out.numel; ++run)
    vmath::dropoutLoop(x + run * inner, o + run * inner, inner, key.k0, key.k1, step,
                       offset + uint64_t((run * parts + part) * inner), threshold, scale);
}

} // namespace

namespace kernels::Random {
const CpuKernel Dropout{prepareDropout, runDropout};
} // namespace kernels::Random

} // namespace mpc::runtime::cpu
