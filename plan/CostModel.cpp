//===- plan/CostModel.cpp - what each instruction of a plan should cost ---===//
#include "plan/CostModel.h"

#include "ops/OpSchema.h"
#include "plan/Collective.h"

namespace mpc::plan {

namespace {
/// The additions of a reducing phase: a float read, added and written per
/// element, at the model's memory bandwidth.
constexpr double kAddSecondsPerByte = 3.0 / kModelBytesPerSecond;

struct CollectiveCostModel {
  double alpha; ///< seconds per message
  double beta;  ///< seconds per byte
};

CollectiveCostModel costModel(CollectiveTransport t) {
  switch (t) {
  case CollectiveTransport::InProcess: return {1e-6, 1.0 / 1e10}; // a hand-off; memcpy
  case CollectiveTransport::Mpi: return {5e-6, 1.0 / 5e9};        // shared memory or a NIC
  case CollectiveTransport::Nccl: return {1e-5, 1.0 / 1e11};      // NVLink
  }
  return {0, 0};
}

} // namespace

CollectiveTransport defaultTransport(const std::string &device) {
  return device.rfind("gpu:", 0) == 0 ? CollectiveTransport::Nccl : CollectiveTransport::InProcess;
}

double kernelFlops(const DeviceProgram &d, const Instr &in) {
  const ops::OpSchema *schema = ops::lookupSchema(in.op);
  if (!schema || in.output >= d.buffers.size()) return 0;
  std::vector<ops::TensorType> operands;
  for (uint32_t b : in.inputs) {
    if (b >= d.buffers.size()) return 0;
    operands.push_back({d.buffers[b].dtype, d.buffers[b].shape});
  }
  ops::TensorType result{d.buffers[in.output].dtype, d.buffers[in.output].shape};
  return schema->flopCount(operands, result, in.attrs);
}

double kernelBytes(const DeviceProgram &d, const Instr &in) {
  double bytes = in.output < d.buffers.size() ? double(d.buffers[in.output].bytes) : 0;
  for (uint32_t b : in.inputs)
    if (b < d.buffers.size()) bytes += double(d.buffers[b].bytes);
  return bytes;
}

/// How much slower than the model's rate a matmul runs for its few result
/// rows (kGemmRowOverhead, CostModel.h); 1 for every other kernel.
double gemmRowFactor(const DeviceProgram &d, const Instr &in) {
  if (in.op != "matmul" || in.output >= d.buffers.size()) return 1;
  const std::vector<int64_t> &shape = d.buffers[in.output].shape;
  const double rows = shape.size() >= 2 ? double(shape[shape.size() - 2]) : 1;
  return rows > 0 ? (rows + kGemmRowOverhead) / rows : 1;
}

double kernelSeconds(const DeviceProgram &d, const Instr &in) {
  return kernelFlops(d, in) * gemmRowFactor(d, in) / kModelFlopsPerSecond +
         kernelBytes(d, in) / kModelBytesPerSecond;
}

double transferSeconds(uint64_t bytes) {
  return kModelTransferLatency + double(bytes) / kModelBytesPerSecond;
}

double collectiveSeconds(ops::OpKind kind, size_t groupSize, uint64_t bytes,
                         CollectiveTransport t) {
  if (groupSize < 2) return 0;
  CollectiveCostModel m = costModel(t);
  double r = double(groupSize), b = double(bytes);
  double phase = (r - 1) * m.alpha + (r - 1) / r * b * m.beta;
  switch (kind) {
  case ops::OpKind::AllReduce: return 2 * phase + b / r * kAddSecondsPerByte * (r - 1);
  case ops::OpKind::ReduceScatter: return phase + b / r * kAddSecondsPerByte * (r - 1);
  default: return phase; // all_gather
  }
}

double collectiveSeconds(const DeviceProgram &program, uint32_t device, const Instr &in,
                         CollectiveTransport t) {
  CollectiveShape shape = collectiveShape(program, device, in);
  return collectiveSeconds(shape.kind, in.group.size(),
                           uint64_t(shape.elements) * shape.elementBytes, t);
}

} // namespace mpc::plan
