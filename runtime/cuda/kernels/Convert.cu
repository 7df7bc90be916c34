//===- runtime/cuda/kernels/Convert.cu - between f32, bf16 and f16 -------===//
//
// One conversion launcher for the cast op and for the staging of bf16 and
// f16 buffers around kernels written over f32 (CudaDevice: a kernel that
// reads a low type reads f32 copies, and its low-typed result is rounded
// from one). Rounding is CUDA's nearest-even (__float2bfloat16_rn,
// __float2half_rn), the rounding of ops/Float16.h that the CPU and the
// reference interpreter use, so a value has the same bits on every backend.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Convert.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

__device__ float load(const void *p, int64_t i, int type) {
  switch (type) {
  case 2: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case 3: return __half2float(static_cast<const __half *>(p)[i]);
  default: return static_cast<const float *>(p)[i];
  }
}

__device__ void store(void *p, int64_t i, int type, float v) {
  switch (type) {
  case 2: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v); break;
  case 3: static_cast<__half *>(p)[i] = __float2half_rn(v); break;
  default: static_cast<float *>(p)[i] = v;
  }
}

__global__ void convertKernel(const void *x, int from, void *y, int to, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(y, i, to, load(x, i, from));
}

} // namespace

void launchConvert(const void *x, ops::DType from, void *y, ops::DType to, int64_t n,
                   cudaStream_t stream) {
  if (n == 0) return;
  convertKernel<<<gridFor(n), kThreads, 0, stream>>>(x, int(from), y, int(to), n);
}

} // namespace mpc::runtime::cuda
