//===- runtime/cuda/TransferOrder.h - one order of a plan's transfers ---===//
//
// NCCL matches the point-to-point operations between two ranks by the order
// in which each side issues them, and an operation may block until its peer
// issues the matching one. Every process of a job therefore issues its NCCL
// sends and receives in one global order that each computes alike from the
// plan: the order in which the receives complete when the plan is simulated
// with sends that never block, receives that wait for their send, and
// collectives that no member passes before all have come (the executor's
// deadlock check, runtime/Executor.cpp).
//
// That order is what keeps the proxies (NcclProxy.h) deadlock-free: a
// device's receives appear in its program order, and every transfer comes
// after the receives that precede its send in the sender's program (the
// send ran after them, and its own receive completes after the send). So
// whatever a transfer waits for (the sender reaching its send, the receiver
// reaching its receive, the peer's matching call) depends only on transfers
// earlier in the order. It cannot
// also follow every device's order of sends: two devices that each send to
// the other before receiving have no such order.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstdint>
#include <vector>

namespace mpc::runtime::cuda {

/// One send/recv pair of a plan.
struct Transfer {
  uint32_t channel = 0;
  uint32_t sender = 0, receiver = 0; ///< device indices
  uint64_t bytes = 0;                ///< the receive buffer's size
};

/// Every send/recv pair of `plan`, ordered by when its receive completes in
/// the simulation. Pairs of a plan that deadlocks are left out from the
/// first stuck receive on (the executor reports the deadlock).
std::vector<Transfer> transferOrder(const plan::Plan &plan);

/// One NCCL operation of a rank's proxy.
struct ProxyOp {
  Transfer transfer;
  bool send = false; ///< this rank hosts the sender (else the receiver)
};

/// The operations `rank` issues, in order: the transfers of `order` between
/// two gpu devices hosted by different ranks, one end on `rank`.
std::vector<ProxyOp> proxyOps(const plan::Plan &plan, const std::vector<Transfer> &order,
                              const std::vector<int> &rankOf, int rank);

} // namespace mpc::runtime::cuda
