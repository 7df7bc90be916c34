//===- runtime/cuda/kernels/Common.cuh - shared device helpers ----------===//
//
// Launch geometry, strided index arithmetic, the deterministic block and
// warp reductions used by every kernel family file, and the report of bad
// data (an index out of range) to the device's DataError record.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/kernels/Kernels.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace mpc::runtime::cuda::detail {

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n elements (capped; the loop covers the
/// rest).
inline unsigned gridFor(int64_t n, int threads = kThreads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > (int64_t(1) << 20)) blocks = int64_t(1) << 20;
  return unsigned(blocks);
}

/// Offsets into operands A and B of element `i` of the iteration space.
__device__ inline void stridedOffsets(const StridedDesc &d, int64_t i, int64_t &offA,
                                      int64_t &offB) {
  offA = 0;
  offB = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t dim = d.dims[k];
    int64_t c = i % dim;
    i /= dim;
    offA += c * d.strideA[k];
    offB += c * d.strideB[k];
  }
}

__device__ inline int64_t stridedOffsetA(const StridedDesc &d, int64_t i) {
  int64_t off = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t dim = d.dims[k];
    off += (i % dim) * d.strideA[k];
    i /= dim;
  }
  return off;
}

/// Sum of `v` over the block (blockDim.x threads, a power of two <= 1024)
/// in a fixed tree order, valid in every thread; for float and double (the
/// norms sum in double). `shared` holds blockDim.x values. The first barrier
/// lets a block sum again while threads still read the previous result.
template <class T> __device__ inline T blockSum(T v, T *shared) {
  unsigned t = threadIdx.x;
  __syncthreads();
  shared[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) shared[t] += shared[t + s];
    __syncthreads();
  }
  return shared[0];
}

/// Sum over a warp in a fixed butterfly order; valid in every lane.
__device__ inline float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline double warpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Reports index `value`, outside [0, bound), at `position` of the data the
/// instruction of `err` reads (see DataError): the first instruction to
/// report in a step claims the record, and of its findings the smallest
/// position is kept, so the report does not depend on timing.
__device__ inline void reportBadIndex(DataErrorSink err, int64_t position, int32_t value,
                                      int64_t bound) {
  DataError *r = err.record;
  unsigned long long mine =
      (static_cast<unsigned long long>(r->step) << 32) | static_cast<unsigned>(err.instr + 1);
  unsigned long long old = atomicCAS(&r->where, 0ull, mine);
  if (old != 0ull && old != mine) return;
  if (old == 0ull) r->bound = bound;
  unsigned long long p = position < 0xffffffffll ? static_cast<unsigned long long>(position)
                                                 : 0xffffffffull;
  atomicMax(&r->what, ~((p << 32) | static_cast<uint32_t>(value)));
}

/// Row-per-warp kernels (softmax, cross-entropy): warps per block, and the
/// grid for `rows` rows (grid-stride loops cover any rows past 2^20 blocks).
constexpr int kWarpsPerBlock = 8;
inline unsigned warpGrid(int64_t rows) {
  int64_t b = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (b > (int64_t(1) << 20)) b = int64_t(1) << 20;
  return unsigned(b < 1 ? 1 : b);
}

} // namespace mpc::runtime::cuda::detail
