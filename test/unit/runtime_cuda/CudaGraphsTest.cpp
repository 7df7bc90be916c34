//===- test/unit/runtime_cuda/CudaGraphsTest.cpp - which kernels a graph holds ===//
//
// `mpc run --cuda-graphs` captures each run of at least two consecutive
// kernel instructions of a device's list (runtime/cuda/CudaGraphs.h). Which
// runs those are is plain logic, checked here without a GPU; that replays
// compute what launches compute is CudaGraphs.ReplayedStepsEqualLaunched-
// StepsBitForBit's (CudaTrainingTest.cpp), on a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaGraphs.h"

#include <gtest/gtest.h>

namespace mpc::runtime::cuda {
namespace {

TEST(CudaGraphRuns, KernelsBetweenTransfersMakeRunsOfTwoOrMore) {
  // K K S K R K K K C K: a run at 0 (2 kernels), none at 3 (one kernel
  // alone), a run at 5 (3 kernels), none at 9 (one again).
  const std::vector<bool> isKernel = {true, true,  false, true, false,
                                      true, true, true,  false, true};
  KernelGraphs g;
  g.findRuns(isKernel);
  EXPECT_EQ(g.runs(), 2u);
  EXPECT_EQ(g.runEnd(0), 2u);
  EXPECT_EQ(g.runEnd(1), 1u) << "inside a run: none starts there";
  EXPECT_EQ(g.runEnd(2), 2u);
  EXPECT_EQ(g.runEnd(3), 3u) << "a lone kernel launches as it is";
  EXPECT_EQ(g.runEnd(5), 8u);
  EXPECT_EQ(g.runEnd(6), 6u);
  EXPECT_EQ(g.runEnd(9), 9u);
  EXPECT_EQ(g.runEnd(10), 10u) << "past the list";
}

TEST(CudaGraphRuns, AWholeStepWithoutTransfersIsOneRun) {
  KernelGraphs g;
  g.findRuns(std::vector<bool>(7, true));
  EXPECT_EQ(g.runs(), 1u);
  EXPECT_EQ(g.runEnd(0), 7u);
  g.findRuns({});
  EXPECT_EQ(g.runs(), 0u) << "finding again forgets the earlier runs";
  g.findRuns({false, true, false});
  EXPECT_EQ(g.runs(), 0u);
}

} // namespace
} // namespace mpc::runtime::cuda
