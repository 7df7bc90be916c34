//===- test/unit/runtime_cuda/GpuAssignmentTest.cpp - GPUs per rank -----===//
//
// How the ranks of a job split their hosts' GPUs (GpuAssignment.h): the
// start-up records, the prefix sum over lower ranks of the same host, and
// the per-device assignment with --device-map and its errors. Pure: runs
// without a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/GpuAssignment.h"

#include "support/Error.h"

#include <gtest/gtest.h>

namespace mpc::runtime::cuda {
namespace {

plan::Plan planWith(const std::vector<std::string> &devices) {
  plan::Plan p;
  for (const std::string &d : devices) {
    plan::DeviceProgram prog;
    prog.device = d;
    p.devices.push_back(prog);
  }
  return p;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GpuAssignment, HostRecordsRoundTrip) {
  for (const HostRecord &r : {HostRecord{"node-1", 2}, HostRecord{"a host with spaces", 0},
                              HostRecord{"", 7}}) {
    HostRecord back = decodeHostRecord(encodeHostRecord(r));
    EXPECT_EQ(back.host, r.host);
    EXPECT_EQ(back.gpuDevices, r.gpuDevices);
  }
  for (const char *bad : {"", "node", " 2", "x2 node", "12345678901 node"})
    EXPECT_THROW(decodeHostRecord(bad), InternalError) << bad;
}

TEST(GpuAssignment, LowerRanksOnTheSameHostComeFirst) {
  std::vector<HostRecord> records = {{"a", 1}, {"a", 1}, {"b", 2}, {"a", 2}, {"b", 1}};
  std::vector<int> expected = {0, 1, 0, 2, 2};
  for (int r = 0; r < 5; ++r) EXPECT_EQ(firstLocalGpu(records, r), expected[size_t(r)]) << r;
}

TEST(GpuAssignment, RanksHostingDifferentCountsGetDisjointGpus) {
  // Rank 0 hosts two gpu devices, rank 1 one, rank 2 none, rank 3 one.
  std::vector<HostRecord> records = {{"h", 2}, {"h", 1}, {"h", 0}, {"h", 1}};
  EXPECT_EQ(firstLocalGpu(records, 0), 0);
  EXPECT_EQ(firstLocalGpu(records, 1), 2);
  EXPECT_EQ(firstLocalGpu(records, 2), 3);
  EXPECT_EQ(firstLocalGpu(records, 3), 3);
}

TEST(GpuAssignment, EachRankNumbersItsOwnGpuDevicesFromItsFirstGpu) {
  plan::Plan p = planWith({"gpu:0", "gpu:1", "cpu:0", "gpu:2", "gpu:3"});
  std::vector<int> rankOf = {0, 0, 0, 1, 1};
  EXPECT_EQ(assignRankGpus(p, rankOf, 0, 0, {}, 4, ""), (std::vector<int>{0, 1, -1, -1, -1}));
  EXPECT_EQ(assignRankGpus(p, rankOf, 1, 2, {}, 4, ""), (std::vector<int>{-1, -1, -1, 2, 3}));
  // On a host of its own, rank 1 starts at GPU 0.
  EXPECT_EQ(assignRankGpus(p, rankOf, 1, 0, {}, 2, ""), (std::vector<int>{-1, -1, -1, 0, 1}));
}

TEST(GpuAssignment, DeviceMapOverridesPerDevice) {
  plan::Plan p = planWith({"gpu:0", "gpu:1", "gpu:2"});
  std::vector<int> rankOf = {0, 1, 2};
  std::map<std::string, int> allOnZero = {{"gpu:0", 0}, {"gpu:1", 0}, {"gpu:2", 0}};
  for (int r = 0; r < 3; ++r) {
    std::vector<int> expected(3, -1);
    expected[size_t(r)] = 0;
    EXPECT_EQ(assignRankGpus(p, rankOf, r, r, allOnZero, 1, ""), expected) << r;
  }
  // Only gpu:2 mapped: the others keep their place in the rank's block.
  std::vector<int> twoRanks = {0, 0, 0};
  EXPECT_EQ(assignRankGpus(p, twoRanks, 0, 0, {{"gpu:2", 0}}, 2, ""),
            (std::vector<int>{0, 1, 0}));
}

TEST(GpuAssignment, ErrorsNameTheDeviceAndTheGpus) {
  plan::Plan p = planWith({"gpu:0", "gpu:1", "gpu:2"});
  std::vector<int> rankOf = {0, 1, 1};
  EXPECT_EQ(errorOf([&] { assignRankGpus(p, rankOf, 1, 1, {}, 2, ""); }),
            "error: gpu:2 needs GPU 2 but this host has 2 visible (lower ranks on "
            "this host take GPUs 0-0; start fewer ranks per host or share GPUs with "
            "--device-map gpu:2=0)");
  EXPECT_EQ(errorOf([&] { assignRankGpus(p, {0, 0, 0}, 0, 0, {}, 2, ""); }),
            "error: gpu:2 needs GPU 2 but this host has 2 visible (share GPUs with "
            "--device-map gpu:2=0)");
  EXPECT_EQ(errorOf([&] { assignRankGpus(p, rankOf, 1, 1, {{"gpu:1", 5}}, 2, ""); }),
            "error: --device-map: gpu:1 is mapped to GPU 5 but this host has 2 "
            "visible");
  EXPECT_EQ(errorOf([&] {
              assignRankGpus(p, rankOf, 1, 1, {}, 0, "no CUDA device is visible");
            }),
            "error: plan uses gpu:1 but no CUDA device is visible");
  EXPECT_EQ(errorOf([&] { assignRankGpus(p, rankOf, 0, 0, {{"gpu:7", 0}}, 2, ""); }),
            "error: --device-map: the plan has no device 'gpu:7'");
  // A rank without gpu devices needs no GPU.
  EXPECT_EQ(assignRankGpus(planWith({"gpu:0", "cpu:0"}), {0, 1}, 1, 0, {}, 0, "none"),
            (std::vector<int>{-1, -1}));
}

} // namespace
} // namespace mpc::runtime::cuda
