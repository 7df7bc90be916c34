//===- plan/TransferWalk.cpp - a plan's sends and receives, played -===//
#include "plan/TransferWalk.h"

#include "plan/Collective.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace mpc::plan {

namespace {

/// Bytes of the buffer a Send reads or a Recv writes (0 for a malformed one:
/// the verifier reports those).
uint64_t messageBytes(const DeviceProgram &dev, const Instr &in) {
  uint32_t id = in.kind == InstrKind::Send ? (in.inputs.empty() ? ~0u : in.inputs[0]) : in.output;
  return id < dev.buffers.size() ? dev.buffers[id].bytes : 0;
}

} // namespace

TransferWalk walkTransfers(const Plan &plan) {
  TransferWalk walk;
  std::vector<size_t> pc(plan.devices.size(), 0);
  std::unordered_map<uint32_t, int64_t> waiting; // messages per channel
  uint64_t inFlight = 0;
  // Collectives meet (plan/Collective.h): members at each one, and whether a
  // device is counted at the one it stands at.
  std::unordered_map<uint32_t, size_t> arrived;
  std::unordered_map<uint32_t, uint64_t> collectiveSent; // bytes, members so far
  std::vector<bool> counted(plan.devices.size(), false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 0; d < plan.devices.size(); ++d) {
      const DeviceProgram &dev = plan.devices[d];
      while (pc[d] < dev.instrs.size()) {
        const Instr &in = dev.instrs[pc[d]];
        if (in.kind == InstrKind::Collective) {
          if (!counted[d]) {
            counted[d] = true;
            ++arrived[in.channel];
            progress = true;
          }
          if (arrived[in.channel] < in.group.size()) break;
          counted[d] = false;
          // Every member's sends are in flight together, at most until the
          // receives of the collective: the members' totals add up.
          if (in.inputs.size() == 1 && in.inputs[0] < dev.buffers.size() &&
              in.output < dev.buffers.size() && collectiveKind(in.op)) {
            uint64_t sent = 0;
            for (const CollectiveMessage &m :
                 collectiveMessages(in, collectiveShape(dev, uint32_t(d), in)))
              if (m.send) {
                ++walk.messages;
                sent += m.bytes;
                walk.largestMessage = std::max(walk.largestMessage, m.bytes);
              }
            uint64_t &all = collectiveSent[in.channel];
            all += sent;
            walk.peakBytesInFlight = std::max(walk.peakBytesInFlight, inFlight + all);
            walk.kernelElements += uint64_t(dev.buffers[in.output].numElements());
          }
        } else if (in.kind == InstrKind::Recv) {
          int64_t &n = waiting[in.channel];
          if (n == 0) break;
          --n;
          inFlight -= std::min(inFlight, messageBytes(dev, in));
        } else if (in.kind == InstrKind::Send) {
          ++walk.messages;
          ++waiting[in.channel];
          uint64_t bytes = messageBytes(dev, in);
          inFlight += bytes;
          walk.peakBytesInFlight = std::max(walk.peakBytesInFlight, inFlight);
          walk.largestMessage = std::max(walk.largestMessage, bytes);
        }
        if (in.kind == InstrKind::Kernel) {
          for (uint32_t id : in.inputs)
            if (id < dev.buffers.size()) walk.kernelElements += uint64_t(dev.buffers[id].numElements());
          if (in.output < dev.buffers.size())
            walk.kernelElements += uint64_t(dev.buffers[in.output].numElements());
        }
        ++pc[d];
        progress = true;
      }
    }
  }
  for (size_t d = 0; d < plan.devices.size(); ++d)
    if (pc[d] < plan.devices[d].instrs.size()) {
      walk.stuck = true;
      walk.device = d;
      walk.instr = pc[d];
      break;
    }
  return walk;
}

std::vector<ChannelRoute> channelRoutes(const Plan &plan) {
  std::map<uint32_t, ChannelRoute> routes;
  for (uint32_t d = 0; d < plan.devices.size(); ++d) {
    const DeviceProgram &dev = plan.devices[d];
    for (const Instr &in : dev.instrs) {
      if (in.kind == InstrKind::Send) routes[in.channel] = {in.channel, d, in.peer};
      if (in.kind == InstrKind::Collective)
        for (const CollectiveMessage &m : collectiveMessages(in, collectiveShape(dev, d, in)))
          if (m.send) routes[m.channel] = {m.channel, d, m.peer};
    }
  }
  std::vector<ChannelRoute> out;
  out.reserve(routes.size());
  for (const auto &[id, r] : routes) out.push_back(r);
  return out;
}

} // namespace mpc::plan
