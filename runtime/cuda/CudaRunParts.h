//===- runtime/cuda/CudaRunParts.h - shared steps of prepareCudaRun -----===//
//
// The two prepareCudaRun overloads (one process: CudaRun.cpp; several MPI
// ranks: CudaJobRun.cpp) choose GPUs and transports differently but enable
// peer access and build the backend factory alike.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaBackend.h"

#include <memory>
#include <vector>

namespace mpc::runtime::cuda {

/// Enables peer access between every two distinct GPUs of `physical` where
/// the hardware allows it (cudaMemcpyPeerAsync works either way).
void enablePeerAccess(const std::vector<int> &physical);

/// The factory (CUDA for devices with a GPU in `physical`, CPU for the
/// others) and run info for `physical`, with `transport`.
CudaRun assembleCudaRun(const CudaOptions &options, std::vector<int> physical,
                        std::unique_ptr<Transport> transport);

} // namespace mpc::runtime::cuda
