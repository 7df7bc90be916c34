//===- runtime/cuda/CudaCheck.h - CUDA, cuBLAS and NCCL status checks ---===//
//
// Every CUDA API call of the backend goes through one of these: a failing
// call is a bug or a broken driver (InternalError naming the call), except
// running out of device memory, which the caller reports as a UserError.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Error.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace mpc::runtime::cuda {

inline void cudaCheck(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw InternalError(std::string("cuda: ") + what + ": " + cudaGetErrorString(status));
}

inline void cublasCheck(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw InternalError(std::string("cublas: ") + what + ": " + cublasGetStatusString(status));
}

/// Checks that the last kernel launch on this thread was accepted.
inline void launchCheck(const char *op) { cudaCheck(cudaGetLastError(), op); }

} // namespace mpc::runtime::cuda
