//===- codegen/PlanStats.cpp - `mpc compile --stats` ---------------------===//
//
// A summary of a lowered plan: per device, the instruction mix, the peak
// arena bytes next to what a plan without reuse would need, and the
// persistent bytes; then the transfers (count and bytes per device pair).
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"

#include "plan/CostModel.h"
#include "support/StringUtil.h"

#include <cstdio>
#include <map>

namespace mpc::codegen {

namespace {

std::string count(size_t n, const char *noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

} // namespace

void printPlanStats(const plan::Plan &plan, std::ostream &os) {
  size_t total = 0;
  for (const plan::DeviceProgram &d : plan.devices) total += d.instrs.size();
  os << "plan " << plan.model << ": " << count(plan.devices.size(), "device") << ", "
     << count(total, "instruction") << "\n";
  std::map<std::pair<std::string, std::string>, std::pair<size_t, uint64_t>> transfers;
  // (op, group) -> collectives per step, bytes each member contributes, and
  // the seconds the cost model gives them on two transports.
  struct CollectiveTotal {
    size_t count = 0;
    uint64_t bytes = 0;
    double inProcess = 0, mpi = 0;
  };
  std::map<std::pair<std::string, std::string>, CollectiveTotal> collectiveTotals;
  for (const plan::DeviceProgram &d : plan.devices) {
    size_t kernels = 0, sends = 0, recvs = 0, collectives = 0;
    for (const plan::Instr &in : d.instrs) {
      switch (in.kind) {
      case plan::InstrKind::Kernel: ++kernels; break;
      case plan::InstrKind::Send: {
        ++sends;
        auto &t = transfers[{d.device, plan.devices.at(in.peer).device}];
        ++t.first;
        t.second += d.buffers.at(in.inputs.at(0)).bytes;
        break;
      }
      case plan::InstrKind::Recv: ++recvs; break;
      case plan::InstrKind::Collective: {
        ++collectives;
        if (d.device != plan.devices.at(in.group.at(0)).device) break; // counted once, by its first member
        std::string group;
        for (uint32_t g : in.group) group += (group.empty() ? "" : ", ") + plan.devices.at(g).device;
        auto &t = collectiveTotals[{in.op, group}];
        ++t.count;
        t.bytes += d.buffers.at(in.inputs.at(0)).bytes;
        t.inProcess += plan::collectiveSeconds(d, in.group[0], in, plan::CollectiveTransport::InProcess);
        t.mpi += plan::collectiveSeconds(d, in.group[0], in, plan::CollectiveTransport::Mpi);
        break;
      }
      }
    }
    char saved[32] = "0%";
    if (d.noReuseBytes > 0)
      std::snprintf(saved, sizeof saved, "%.0f%%",
                    100.0 * double(d.noReuseBytes - std::min(d.noReuseBytes, d.arenaBytes)) /
                        double(d.noReuseBytes));
    os << "device " << d.device << ": " << count(d.instrs.size(), "instruction") << " ("
       << count(kernels, "kernel") << ", " << count(sends, "send") << ", " << count(recvs, "recv")
       << (collectives ? ", " + count(collectives, "collective") : std::string()) << "), arena peak "
       << byteSizeText(d.arenaBytes) << " (no reuse " << byteSizeText(d.noReuseBytes) << ", saved "
       << saved << "), persistent " << byteSizeText(d.persistentBytes) << "\n";
  }
  for (const auto &[pair, t] : transfers)
    os << "transfer " << pair.first << " -> " << pair.second << ": " << t.first << " per step, "
       << byteSizeText(t.second) << "\n";
  for (const auto &[key, t] : collectiveTotals) {
    char cost[128];
    std::snprintf(cost, sizeof cost, "predicted %.1f us in process, %.1f us over MPI",
                  t.inProcess * 1e6, t.mpi * 1e6);
    os << "collective " << key.first << " over [" << key.second << "]: " << t.count
       << " per step, " << byteSizeText(t.bytes) << " from each member; " << cost << "\n";
  }
}

void printRecomputeStats(const plan::Plan &with, const plan::Plan &without, std::ostream &os) {
  for (const plan::DeviceProgram &d : with.devices)
    for (const plan::DeviceProgram &w : without.devices)
      if (w.device == d.device) {
        char share[32];
        std::snprintf(share, sizeof share, "%.0f%%",
                      w.arenaBytes ? 100.0 * double(d.arenaBytes) / double(w.arenaBytes) : 100.0);
        os << "recompute: device " << d.device << ": arena peak " << byteSizeText(d.arenaBytes)
           << ", " << byteSizeText(w.arenaBytes) << " without (" << share << ")\n";
      }
}

} // namespace mpc::codegen
