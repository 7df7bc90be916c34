//===- plan/StepSimulation.cpp - one step of a plan on the cost model -----===//
#include "plan/StepSimulation.h"

#include <algorithm>
#include <map>
#include <set>

namespace mpc::plan {

namespace {

CollectiveTransport transportOf(const SimulationOptions &o, const Instr &in,
                                const DeviceProgram &dev) {
  if (!o.rankOf.empty())
    for (uint32_t m : in.group)
      if (m < o.rankOf.size() && in.group[0] < o.rankOf.size() &&
          o.rankOf[m] != o.rankOf[in.group[0]])
        return CollectiveTransport::Mpi;
  return defaultTransport(dev.device);
}

} // namespace

SimulatedStep simulateStep(const Plan &plan, const SimulationOptions &options) {
  const size_t nd = plan.devices.size();
  SimulatedStep sim;
  sim.spans.resize(nd);
  sim.busy.assign(nd, 0);
  std::vector<size_t> pc(nd, 0);
  std::vector<double> clock(nd, 0);
  std::map<uint32_t, double> arrival; // a transfer's channel -> its message's arrival
  // Collectives by base channel: when each member came, and when it ends.
  std::map<uint32_t, std::vector<double>> arrivals;
  std::set<std::pair<uint32_t, size_t>> arrived;
  std::map<uint32_t, double> finished;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 0; d < nd; ++d) {
      const DeviceProgram &dev = plan.devices[d];
      for (; pc[d] < dev.instrs.size(); ++pc[d], progress = true) {
        const Instr &in = dev.instrs[pc[d]];
        const double begin = clock[d];
        if (in.kind == InstrKind::Kernel) {
          double s = kernelSeconds(dev, in);
          clock[d] += s;
          sim.busy[d] += s;
        } else if (in.kind == InstrKind::Collective) {
          auto done = finished.find(in.channel);
          if (done == finished.end()) {
            std::vector<double> &at = arrivals[in.channel];
            if (arrived.insert({in.channel, d}).second) at.push_back(clock[d]);
            if (at.size() < in.group.size()) break;
            double s = collectiveSeconds(dev, uint32_t(d), in, transportOf(options, in, dev));
            sim.collectiveSeconds += s;
            if (!options.priceCollectives) s = 0;
            done = finished.emplace(in.channel, *std::max_element(at.begin(), at.end()) + s).first;
          }
          clock[d] = std::max(clock[d], done->second);
        } else if (in.kind == InstrKind::Send) {
          uint64_t bytes = in.inputs.empty() || in.inputs[0] >= dev.buffers.size()
                               ? 0
                               : dev.buffers[in.inputs[0]].bytes;
          arrival[in.channel] = clock[d] + transferSeconds(bytes);
        } else {
          auto it = arrival.find(in.channel);
          if (it == arrival.end()) break;
          clock[d] = std::max(clock[d], it->second);
        }
        // A blocked device's clock stood still: a receive's or a
        // collective's span begins when the device first came to it.
        sim.spans[d].push_back({uint32_t(pc[d]), begin, clock[d]});
      }
    }
  }
  for (size_t d = 0; d < nd; ++d) {
    if (pc[d] < plan.devices[d].instrs.size()) sim.complete = false;
    sim.makespan = std::max(sim.makespan, clock[d]);
  }
  return sim;
}

} // namespace mpc::plan
