//===- runtime/cuda/kernels/Random.cu - dropout -------------------------===//
//
// The CUDA side of the Random family, host record included (as for
// Elementwise). The mask comes from support/Philox.h's counter-based
// generator with the same key, step and element index as the CPU kernel and
// the reference interpreter, so all three agree bit for bit. The kernel
// reads the step on the device, from the DataError record that
// launchBeginStep sets before each step: a launch captured once in a CUDA
// graph (mpc run --cuda-graphs) then draws each replayed step's own mask.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "support/Philox.h"

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

// No __restrict__: y may be x's buffer (dropout may run in place,
// ir/ops/Random.cpp); each thread reads x[i] before it writes y[i].
// A part of the whole (tensor parallelism, parts > 1): element i is the
// whole's ((i / inner) * parts + part) * inner + i % inner.
__global__ void dropoutKernel(const float *x, float *y, int64_t n, philox::Key key,
                              const DataError *stepRecord, uint64_t offset, uint32_t threshold, float scale,
                              int64_t parts, int64_t part, int64_t inner) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t step = stepRecord ? uint64_t(stepRecord->step) : 1;
    const int64_t whole = parts == 1 ? i : (i / inner * parts + part) * inner + i % inner;
    y[i] = philox::dropoutKeep(key, step, offset + uint64_t(whole), threshold) ? x[i] * scale
                                                                               : 0.f;
  }
}

Launch prepareDropout(const KernelOperands &k) {
  const double p = attrFloat(k.instr->attrs, "p"); // in [0, 1): proven by the plan verifier
  const philox::Key key =
      philox::dropoutKey(k.ctx.seed, philox::nameHash(attrString(k.instr->attrs, "key")));
  const uint32_t threshold = philox::dropThreshold(p);
  const uint64_t offset = uint64_t(attrInt(k.instr->attrs, "offset"));
  const int64_t parts = attrInt(k.instr->attrs, "parts"), part = attrInt(k.instr->attrs, "part"),
                inner = attrInt(k.instr->attrs, "inner");
  const float scale = float(1.0 / (1.0 - p));
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  const int64_t n = k.output->numElements();
  const DataError *stepRecord = k.ctx.dataError.record;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    if (n == 0) return;
    dropoutKernel<<<gridFor(n), kThreads, 0, s>>>(x, y, n, key, stepRecord, offset, threshold,
                                                  scale, parts, part, inner);
  };
}

} // namespace

namespace kernels::Random {
const CudaKernel Dropout{nullptr, prepareDropout};
} // namespace kernels::Random

} // namespace mpc::runtime::cuda
