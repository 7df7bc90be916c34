//===- codegen/CollectiveCost.cpp - what a collective should cost ---------===//
#include "codegen/CollectiveCost.h"

#include "plan/Collective.h"

namespace mpc::codegen {

namespace {
/// The additions of a reducing phase: a float read, added and written per
/// element, at the cost model's memory bandwidth (codegen/PipelineCost.cpp).
constexpr double kAddSecondsPerByte = 3.0 / 1e10;

struct CostModel {
  double alpha; ///< seconds per message
  double beta;  ///< seconds per byte
};

CostModel costModel(CollectiveTransport t) {
  switch (t) {
  case CollectiveTransport::InProcess: return {1e-6, 1.0 / 1e10}; // a hand-off; memcpy
  case CollectiveTransport::Mpi: return {5e-6, 1.0 / 5e9};        // shared memory or a NIC
  case CollectiveTransport::Nccl: return {1e-5, 1.0 / 1e11};      // NVLink
  }
  return {0, 0};
}

} // namespace

double collectiveSeconds(ops::OpKind kind, size_t groupSize, uint64_t bytes,
                         CollectiveTransport t) {
  if (groupSize < 2) return 0;
  CostModel m = costModel(t);
  double r = double(groupSize), b = double(bytes);
  double phase = (r - 1) * m.alpha + (r - 1) / r * b * m.beta;
  switch (kind) {
  case ops::OpKind::AllReduce: return 2 * phase + b / r * kAddSecondsPerByte * (r - 1);
  case ops::OpKind::ReduceScatter: return phase + b / r * kAddSecondsPerByte * (r - 1);
  default: return phase; // all_gather
  }
}

double collectiveSeconds(const plan::DeviceProgram &program, uint32_t device,
                         const plan::Instr &in, CollectiveTransport t) {
  plan::CollectiveShape shape = plan::collectiveShape(program, device, in);
  return collectiveSeconds(shape.kind, in.group.size(),
                           uint64_t(shape.elements) * shape.elementBytes, t);
}

} // namespace mpc::codegen
