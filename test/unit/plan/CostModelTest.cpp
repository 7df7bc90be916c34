//===- test/unit/plan/CostModelTest.cpp - what an instruction should cost ===//
//
// The cost model's prices (plan/CostModel.h): a kernel's FLOPs over the
// model's rate plus its bytes over the bandwidth, and a matmul with few
// result rows charged m / (m + kGemmRowOverhead) of the rate, so that the
// per-call cost of a GEMM makes splitting a batch ever finer stop paying.
//
//===----------------------------------------------------------------------===//
#include "plan/CostModel.h"

#include <gtest/gtest.h>

namespace mpc::plan {
namespace {

/// A device program of one kernel `op` over buffers of the given shapes
/// (the last one the result), with `attrs`.
DeviceProgram oneKernel(const std::string &op, const std::vector<std::vector<int64_t>> &shapes,
                        AttrMap attrs = {}) {
  DeviceProgram d;
  d.device = "cpu:0";
  for (uint32_t i = 0; i < shapes.size(); ++i) {
    Buffer b;
    b.id = i;
    b.shape = shapes[i];
    b.bytes = uint64_t(b.numElements()) * 4;
    d.buffers.push_back(b);
  }
  Instr in;
  in.op = op;
  in.attrs = std::move(attrs);
  for (uint32_t i = 0; i + 1 < shapes.size(); ++i) in.inputs.push_back(i);
  in.output = uint32_t(shapes.size() - 1);
  d.instrs.push_back(in);
  return d;
}

TEST(CostModel, MatmulWithFewRowsRunsBelowTheRate) {
  const AttrMap noTranspose = {{"transpose_a", false}, {"transpose_b", false}};
  for (int64_t m : {1, 64, 128, 1024}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    DeviceProgram d = oneKernel("matmul", {{m, 1024}, {1024, 512}, {m, 512}}, noTranspose);
    const Instr &in = d.instrs[0];
    const double flops = 2.0 * double(m) * 1024 * 512;
    EXPECT_DOUBLE_EQ(kernelFlops(d, in), flops);
    const double compute = kernelSeconds(d, in) - kernelBytes(d, in) / kModelBytesPerSecond;
    EXPECT_NEAR(compute, flops / kModelFlopsPerSecond * (double(m) + kGemmRowOverhead) / double(m),
                1e-12);
  }
  // 64 rows at 0.70 of the rate, 512 at 0.95: per FLOP, the 64-row product
  // costs more than the 512-row one.
  auto perFlop = [](int64_t m) {
    DeviceProgram d = oneKernel("matmul", {{m, 1024}, {1024, 1024}, {m, 1024}},
                                {{"transpose_a", false}, {"transpose_b", false}});
    return kernelSeconds(d, d.instrs[0]) / kernelFlops(d, d.instrs[0]);
  };
  EXPECT_GT(perFlop(64), 1.3 * perFlop(512));
}

TEST(CostModel, OtherKernelsAreFlopsAndBytes) {
  DeviceProgram d = oneKernel("add", {{64, 1024}, {64, 1024}, {64, 1024}});
  const Instr &in = d.instrs[0];
  EXPECT_DOUBLE_EQ(kernelBytes(d, in), 3.0 * 64 * 1024 * 4);
  EXPECT_DOUBLE_EQ(kernelSeconds(d, in), kernelFlops(d, in) / kModelFlopsPerSecond +
                                             kernelBytes(d, in) / kModelBytesPerSecond);
}

} // namespace
} // namespace mpc::plan
