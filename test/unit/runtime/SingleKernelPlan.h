//===- test/unit/runtime/SingleKernelPlan.h - a plan of one kernel ------===//
//
// The smallest plan that runs one kernel instruction on one device: the
// operands are buffers 0..n-1 and plan inputs in0..in(n-1), the result is
// buffer n and plan output `out`, all in the persistent region. The CPU and
// CUDA kernel tests check kernels through the real backends with it;
// inPlaceVariant is the same plan with the result aliasing an operand.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Type.h"
#include "plan/Plan.h"

#include <string>
#include <vector>

namespace mpc::test {

/// An operand's or the result's type: the IR's tensor type (the IR and the
/// plan share one DType, ops/DType.h), so op cases pass theirs as they are.
using OperandType = ir::TensorType;

inline plan::Plan singleKernelPlan(const std::string &op, const plan::AttrMap &attrs,
                                   const std::vector<OperandType> &operands,
                                   const OperandType &result,
                                   const std::string &device = "cpu:0") {
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
    b.bytes = uint64_t(b.numElements()) * uint64_t(ops::dtypeSize(b.dtype));
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
    p.inputs.push_back({"in" + std::to_string(i), operands[i].dtype, operands[i].shape, 0, id, {}, {}});
  }
  in.output = addBuffer("out", result);
  p.outputs.push_back({"out", result.dtype, result.shape, 0, in.output, {}, {}});
  d.instrs.push_back(in);
  d.persistentBytes = offset;
  p.devices.push_back(std::move(d));
  return p;
}

/// `p` (a singleKernelPlan) run in place: the kernel writes its result into
/// operand `operand`'s buffer, and the output `out` names that buffer, as
/// when the compiler lets a result take over a dying operand's bytes.
inline plan::Plan inPlaceVariant(plan::Plan p, size_t operand) {
  plan::Instr &in = p.devices[0].instrs[0];
  in.output = in.inputs.at(operand);
  p.outputs[0].buffer = in.output;
  return p;
}

} // namespace mpc::test
