//===- test/unit/runtime_cuda/CudaAvailabilityTest.cpp - no-GPU behaviour -===//
//
// What a CUDA build does on any machine: report whether a GPU is visible
// (with the reason when not), reject a GPU plan with a plain message when
// there is none, still run CPU plans, and parse the `mpc run` flags of the
// CUDA runtime. These tests run with and without a GPU.
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime_cuda/CudaTestUtil.h"

#include "runtime/Executor.h"
#include "runtime/cuda/CudaBackend.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cstring>

namespace mpc::runtime::cuda {
namespace {

using test::singleOpPlan;

std::string userErrorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

TEST(CudaAvailability, ReportsWhetherAGpuIsVisibleWithTheReason) {
  std::string why;
  if (cudaAvailable(&why)) {
    EXPECT_GT(visibleGpuCount(), 0);
  } else {
    EXPECT_EQ(why.rfind("no CUDA device is visible", 0), 0u) << why;
    EXPECT_EQ(visibleGpuCount(), 0);
  }
}

TEST(CudaAvailability, GpuPlanIsRejectedWithAClearMessageWhenNoGpuFits) {
  plan::Plan p = singleOpPlan("neg", {}, {{plan::DType::F32, {3}}}, {plan::DType::F32, {3}});
  EXPECT_TRUE(planUsesGpu(p));
  if (!cudaAvailable()) {
    std::string msg = userErrorOf([&] { prepareCudaRun(p, {}); });
    EXPECT_NE(msg.find("plan uses gpu:0 but no CUDA device is visible"), std::string::npos)
        << msg;
    return;
  }
  // With GPUs: a device index past the visible ones names the count and
  // suggests the device map.
  int count = visibleGpuCount();
  p.devices[0].device = "gpu:" + std::to_string(count);
  std::string msg = userErrorOf([&] { prepareCudaRun(p, {}); });
  EXPECT_NE(msg.find("plan uses gpu:" + std::to_string(count)), std::string::npos) << msg;
  EXPECT_NE(msg.find("visible"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--device-map"), std::string::npos) << msg;
}

TEST(CudaAvailability, CpuPlanRunsThroughTheCudaFactoryOnAnyMachine) {
  plan::Plan p = singleOpPlan("add", {}, {{plan::DType::F32, {2, 3}}, {plan::DType::F32, {3}}},
                              {plan::DType::F32, {2, 3}}, "cpu:0");
  EXPECT_FALSE(planUsesGpu(p));
  CudaRun run = prepareCudaRun(p, {});
  Executor exec(p, run.factory, std::move(run.transport));
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  exec.write(p.inputs[0], a, sizeof a);
  exec.write(p.inputs[1], b, sizeof b);
  exec.step();
  std::vector<float> out = exec.readFloats(p.outputs[0]);
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(CudaOptions, ParsesTheDeviceMap) {
  auto m = parseDeviceMap("gpu:0=0,gpu:1=0,gpu:2=1");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.at("gpu:2"), 1);
  EXPECT_TRUE(parseDeviceMap("").empty());
  for (const char *bad : {"gpu:0", "gpu:0=", "cpu:0=0", "gpu:x=0", "gpu:0=-1", "gpu:0=0,,"}) {
    std::string msg = userErrorOf([&] { parseDeviceMap(bad); });
    EXPECT_NE(msg.find("error: --device-map: bad entry"), std::string::npos) << bad << ": " << msg;
  }
  std::string twice = userErrorOf([] { parseDeviceMap("gpu:0=0,gpu:0=1"); });
  EXPECT_NE(twice.find("device 'gpu:0' mapped twice"), std::string::npos) << twice;
}

TEST(CudaOptions, ParsesTheTransport) {
  EXPECT_EQ(parseTransport(""), TransportKind::Peer);
  EXPECT_EQ(parseTransport("peer"), TransportKind::Peer);
  if (ncclAvailable()) EXPECT_EQ(parseTransport("nccl"), TransportKind::Nccl);
  else EXPECT_NE(userErrorOf([] { parseTransport("nccl"); }).find("without NCCL"), std::string::npos);
  std::string msg = userErrorOf([] { parseTransport("mpi"); });
  EXPECT_NE(msg.find("--transport: unknown transport 'mpi' (expected peer or nccl)"),
            std::string::npos)
      << msg;
}

TEST(CudaOptions, DeviceMapNamingAnAbsentDeviceIsAnError) {
  plan::Plan p = singleOpPlan("neg", {}, {{plan::DType::F32, {3}}}, {plan::DType::F32, {3}});
  CudaOptions o;
  o.deviceMap = parseDeviceMap("gpu:5=0");
  std::string msg = userErrorOf([&] { resolvePhysicalDevices(p, o); });
  EXPECT_NE(msg.find("--device-map: the plan has no device 'gpu:5'"), std::string::npos) << msg;
}

} // namespace
} // namespace mpc::runtime::cuda
