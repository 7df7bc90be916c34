//===- test/unit/runtime_cuda/CudaTestUtil.h - helpers for GPU tests ----===//
//
// GPU tests skip, saying why, when no GPU is visible; they never pass
// without running. singleOpPlan builds the smallest plan that runs one
// kernel instruction (operands and result in the persistent region, every
// operand a plan input), so a kernel can be checked through the real
// backend and executor on any device name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaBackend.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#define MPC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::mpc::runtime::cuda::cudaAvailable())                               \
      GTEST_SKIP() << "no CUDA device visible";                                \
  } while (0)

namespace mpc::test {

struct OperandType {
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> shape;
};

inline plan::Plan singleOpPlan(const std::string &op, const plan::AttrMap &attrs,
                               const std::vector<OperandType> &operands,
                               const OperandType &result, const std::string &device = "gpu:0") {
  plan::Plan p;
  p.model = "single_" + op;
  plan::DeviceProgram d;
  d.device = device;
  uint64_t offset = 0;
  auto addBuffer = [&](const std::string &name, const OperandType &t) {
    plan::Buffer b;
    b.id = uint32_t(d.buffers.size());
    b.name = name;
    b.dtype = t.dtype;
    b.shape = t.shape;
    b.region = plan::Region::Persistent;
    b.offset = offset;
    b.bytes = uint64_t(b.numElements()) * 4;
    offset += (b.bytes + 63) / 64 * 64;
    d.buffers.push_back(b);
    return b.id;
  };
  plan::Instr in;
  in.kind = plan::InstrKind::Kernel;
  in.op = op;
  in.attrs = attrs;
  in.node = "out";
  for (size_t i = 0; i < operands.size(); ++i) {
    uint32_t id = addBuffer("in" + std::to_string(i), operands[i]);
    in.inputs.push_back(id);
    p.inputs.push_back({"in" + std::to_string(i), operands[i].dtype, operands[i].shape, 0, id});
  }
  in.output = addBuffer("out", result);
  p.outputs.push_back({"out", result.dtype, result.shape, 0, in.output});
  d.instrs.push_back(in);
  d.persistentBytes = offset;
  p.devices.push_back(std::move(d));
  return p;
}

/// Relative difference with an absolute floor: |a - b| / max(|b|, floor).
inline double relDiff(double a, double b, double floor = 1e-3) {
  double m = b < 0 ? -b : b;
  double d = a - b < 0 ? b - a : a - b;
  return d / (m > floor ? m : floor);
}

} // namespace mpc::test
