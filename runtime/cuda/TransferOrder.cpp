//===- runtime/cuda/TransferOrder.cpp - one order of a plan's transfers -===//
#include "runtime/cuda/TransferOrder.h"

#include "runtime/cuda/GpuAssignment.h"
#include "support/Error.h"

#include <set>
#include <unordered_map>

namespace mpc::runtime::cuda {

std::vector<Transfer> transferOrder(const plan::Plan &plan) {
  // Who sends on each channel (the receiver knows its own side).
  std::unordered_map<uint32_t, uint32_t> senderOf;
  for (uint32_t d = 0; d < plan.devices.size(); ++d)
    for (const plan::Instr &in : plan.devices[d].instrs)
      if (in.kind == plan::InstrKind::Send) senderOf[in.channel] = d;

  // The executor's simulation: each device runs until a receive finds no
  // message; sweeps repeat until nothing moves. Deterministic, so every rank
  // gets the same order.
  std::vector<Transfer> order;
  std::vector<size_t> pc(plan.devices.size(), 0);
  std::unordered_map<uint32_t, int64_t> inFlight;
  std::unordered_map<uint32_t, std::set<uint32_t>> arrived; // collective channel -> members there
  for (bool progress = true; progress;) {
    progress = false;
    for (uint32_t d = 0; d < plan.devices.size(); ++d) {
      const plan::DeviceProgram &prog = plan.devices[d];
      while (pc[d] < prog.instrs.size()) {
        const plan::Instr &in = prog.instrs[pc[d]];
        if (in.kind == plan::InstrKind::Recv) {
          if (inFlight[in.channel] == 0) break;
          --inFlight[in.channel];
          auto sender = senderOf.find(in.channel);
          MPC_ASSERT(sender != senderOf.end(), "receive without a send");
          MPC_ASSERT(in.output < prog.buffers.size(), "receive into a missing buffer");
          order.push_back({in.channel, sender->second, d, prog.buffers[in.output].bytes});
        } else if (in.kind == plan::InstrKind::Send) {
          ++inFlight[in.channel];
        } else if (in.kind == plan::InstrKind::Collective) {
          // A meeting: no member passes it before every member came.
          auto &came = arrived[in.channel];
          came.insert(d);
          if (came.size() < in.group.size()) break;
        }
        ++pc[d];
        progress = true;
      }
    }
  }
  return order;
}

std::vector<ProxyOp> proxyOps(const plan::Plan &plan, const std::vector<Transfer> &order,
                              const std::vector<int> &rankOf, int rank) {
  MPC_ASSERT(rankOf.size() == plan.devices.size(), "rank map of the wrong size");
  std::vector<ProxyOp> ops;
  for (const Transfer &t : order) {
    int rs = rankOf[t.sender], rr = rankOf[t.receiver];
    if (rs == rr || (rs != rank && rr != rank)) continue;
    if (!isGpuDevice(plan.devices[t.sender].device) ||
        !isGpuDevice(plan.devices[t.receiver].device))
      continue;
    ops.push_back({t, rs == rank});
  }
  return ops;
}

} // namespace mpc::runtime::cuda
