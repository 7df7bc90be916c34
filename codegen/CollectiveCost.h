//===- codegen/CollectiveCost.h - what a collective should cost -----------===//
//
// The cost model's price of a collective instruction (plan/Collective.h) on
// each transport: every member sends and receives R-1 messages per phase,
// each of about bytes/R, so a phase costs ·α + (R-1)/R·bytes·β, plus
// the member's additions for a reducing phase. α (latency per message) and
// β (seconds per byte) per transport are rough constants of this project's
// machines: only ratios matter (the bubble, the share of a collective that
// backward hides), and they keep the transports in proportion.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/OpKind.h"
#include "plan/Plan.h"

#include <cstddef>
#include <cstdint>

namespace mpc::codegen {

enum class CollectiveTransport {
  InProcess, ///< devices on threads of one process (runtime/Channel.h)
  Mpi,       ///< devices on different ranks (runtime/mpi/)
  Nccl,      ///< GPU groups
};

/// Seconds for one member to run collective `kind` over `groupSize`
/// devices whose split tensor has `bytes` bytes (ops::collectiveElements).
double collectiveSeconds(ops::OpKind kind, size_t groupSize, uint64_t bytes,
                         CollectiveTransport t);

/// The same for collective instruction `in` of device `device` (`program`
/// its list) of a verified plan.
double collectiveSeconds(const plan::DeviceProgram &program, uint32_t device,
                         const plan::Instr &in, CollectiveTransport t);

} // namespace mpc::codegen
