//===- runtime/cuda/kernels/Convert.h - between f32, bf16 and f16 ---------===//
//
// Compiled by nvcc (C++17) and by the host compiler (C++20).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/DType.h"

#include <cuda_runtime_api.h>
#include <cstdint>

namespace mpc::runtime::cuda {

/// y[i] = x[i] converted from `from` to `to` (f32, bf16 or f16; f32 and
/// i32 take 4 bytes, the low types 2), rounding to nearest-even.
void launchConvert(const void *x, ops::DType from, void *y, ops::DType to, int64_t n,
                   cudaStream_t stream);

} // namespace mpc::runtime::cuda
