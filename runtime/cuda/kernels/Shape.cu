//===- runtime/cuda/kernels/Shape.cu - strided block copies -------------===//
//
// slice and concat: `outer` rows of `row` contiguous 4-byte elements (f32 or
// i32), row o read at src + o * srcStride and written at dst + o * dstStride.
// A slice is one block copy; a concat is one per operand into its columns of
// the result. One thread per element, reads and writes coalesced along rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

__global__ void blockCopyKernel(const uint32_t *__restrict__ src, uint32_t *__restrict__ dst,
                                int64_t n, int64_t row, int64_t srcStride, int64_t dstStride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / row, j = i - o * row;
    dst[o * dstStride + j] = src[o * srcStride + j];
  }
}

} // namespace

void launchBlockCopy(const uint32_t *src, uint32_t *dst, int64_t outer, int64_t row,
                     int64_t srcStride, int64_t dstStride, cudaStream_t stream) {
  int64_t n = outer * row;
  if (n == 0) return;
  blockCopyKernel<<<gridFor(n), kThreads, 0, stream>>>(src, dst, n, row, srcStride, dstStride);
}

} // namespace mpc::runtime::cuda
