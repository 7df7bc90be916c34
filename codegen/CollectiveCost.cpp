//===- codegen/CollectiveCost.cpp - what a collective should cost ---------===//
#include "codegen/CollectiveCost.h"

namespace mpc::codegen {

namespace {
/// The additions of a reducing phase: a float read, added and written per
/// element, at the cost model's memory bandwidth (codegen/PipelineCost.cpp).
constexpr double kAddSecondsPerByte = 3.0 / 1e10;
} // namespace

CollectiveCostModel collectiveCostModel(CollectiveTransport t) {
  switch (t) {
  case CollectiveTransport::InProcess: return {1e-6, 1.0 / 1e10}; // a hand-off; memcpy
  case CollectiveTransport::Mpi: return {5e-6, 1.0 / 5e9};        // shared memory or a NIC
  case CollectiveTransport::Nccl: return {1e-5, 1.0 / 1e11};      // NVLink
  }
  return {0, 0};
}

double collectiveSeconds(ops::OpKind kind, size_t groupSize, uint64_t bytes,
                         CollectiveTransport t) {
  if (groupSize < 2) return 0;
  CollectiveCostModel m = collectiveCostModel(t);
  double r = double(groupSize), b = double(bytes);
  double phase = (r - 1) * m.alpha + (r - 1) / r * b * m.beta;
  switch (kind) {
  case ops::OpKind::AllReduce: return 2 * phase + b / r * kAddSecondsPerByte * (r - 1);
  case ops::OpKind::ReduceScatter: return phase + b / r * kAddSecondsPerByte * (r - 1);
  default: return phase; // all_gather
  }
}

const char *collectiveTransportName(CollectiveTransport t) {
  switch (t) {
  case CollectiveTransport::InProcess: return "in-process";
  case CollectiveTransport::Mpi: return "mpi";
  case CollectiveTransport::Nccl: return "nccl";
  }
  return "?";
}

} // namespace mpc::codegen
