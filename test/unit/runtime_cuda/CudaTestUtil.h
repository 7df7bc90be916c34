//===- test/unit/runtime_cuda/CudaTestUtil.h - helpers for GPU tests ----===//
//
// GPU tests skip, saying why, when no GPU is visible; they never pass
// without running. singleOpPlan is the shared one-kernel plan
// (test/unit/runtime/SingleKernelPlan.h) on a GPU device, so a kernel can be
// checked through the real backend and executor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/cuda/CudaBackend.h"
#include "test/unit/runtime/SingleKernelPlan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#define MPC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::mpc::runtime::cuda::cudaAvailable())                               \
      GTEST_SKIP() << "no CUDA device visible";                                \
  } while (0)

namespace mpc::test {

/// The shared one-kernel plan, on a GPU device by default.
inline plan::Plan singleOpPlan(const std::string &op, const plan::AttrMap &attrs,
                               const std::vector<OperandType> &operands,
                               const OperandType &result, const std::string &device = "gpu:0") {
  return singleKernelPlan(op, attrs, operands, result, device);
}

/// Relative difference with an absolute floor: |a - b| / max(|b|, floor).
inline double relDiff(double a, double b, double floor = 1e-3) {
  double m = b < 0 ? -b : b;
  double d = a - b < 0 ? b - a : a - b;
  return d / (m > floor ? m : floor);
}

} // namespace mpc::test
