//===- plan/StepSimulation.cpp - one step of a plan on the cost model -----===//
#include "plan/StepSimulation.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

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
  const int64_t steps = std::max<int64_t>(options.steps, 1);
  SimulatedStep sim;
  sim.spans.resize(nd);
  sim.busy.assign(nd, 0);
  sim.stepEnds.assign(size_t(steps), 0);
  std::vector<size_t> pc(nd, 0);
  std::vector<int64_t> step(nd, 0); // the step each device is in
  std::vector<double> clock(nd, 0);
  // Keyed by (step, channel): a transfer's message's arrival.
  std::map<std::pair<int64_t, uint32_t>, double> arrival;
  // Collectives by (step, base channel): when each member came, and when it ends.
  std::map<std::pair<int64_t, uint32_t>, std::vector<double>> arrivals;
  std::set<std::tuple<int64_t, uint32_t, size_t>> arrived;
  std::map<std::pair<int64_t, uint32_t>, double> finished;
  // A device starts step k once every device has finished step k - 2
  // (runtime::Executor::runSteps).
  auto mayStart = [&](int64_t k) {
    for (size_t d = 0; d < nd; ++d)
      if (step[d] < k - 1) return false;
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 0; d < nd; ++d) {
      const DeviceProgram &dev = plan.devices[d];
      for (;;) {
        if (pc[d] == dev.instrs.size()) {
          if (step[d] == steps) break;
          sim.stepEnds[size_t(step[d])] = std::max(sim.stepEnds[size_t(step[d])], clock[d]);
          if (step[d] + 1 < steps && !mayStart(step[d] + 1)) break;
          ++step[d];
          pc[d] = 0;
          progress = true;
          if (step[d] == steps) break;
          continue;
        }
        const Instr &in = dev.instrs[pc[d]];
        const int64_t k = step[d];
        const double begin = clock[d];
        if (in.kind == InstrKind::Kernel) {
          double s = kernelSeconds(dev, in);
          clock[d] += s;
          if (k == 0) sim.busy[d] += s;
        } else if (in.kind == InstrKind::Collective) {
          auto done = finished.find({k, in.channel});
          if (done == finished.end()) {
            std::vector<double> &at = arrivals[{k, in.channel}];
            if (arrived.insert({k, in.channel, d}).second) at.push_back(clock[d]);
            if (at.size() < in.group.size()) break;
            double s = collectiveSeconds(dev, uint32_t(d), in, transportOf(options, in, dev));
            if (k == 0) sim.collectiveSeconds += s;
            if (!options.priceCollectives) s = 0;
            done = finished.emplace(std::make_pair(k, in.channel),
                                    *std::max_element(at.begin(), at.end()) + s)
                       .first;
          }
          clock[d] = std::max(clock[d], done->second);
        } else if (in.kind == InstrKind::Send) {
          uint64_t bytes = in.inputs.empty() || in.inputs[0] >= dev.buffers.size()
                               ? 0
                               : dev.buffers[in.inputs[0]].bytes;
          arrival[{k, in.channel}] = clock[d] + transferSeconds(bytes);
        } else {
          auto it = arrival.find({k, in.channel});
          if (it == arrival.end()) break;
          clock[d] = std::max(clock[d], it->second);
        }
        // A blocked device's clock stood still: a receive's or a
        // collective's span begins when the device first came to it.
        if (k == 0) sim.spans[d].push_back({uint32_t(pc[d]), begin, clock[d]});
        ++pc[d];
        progress = true;
      }
    }
  }
  for (size_t d = 0; d < nd; ++d)
    if (step[d] < steps) sim.complete = false;
  sim.makespan = sim.stepEnds[0];
  return sim;
}

double SimulatedStep::overlappedStep() const {
  if (stepEnds.size() < 2) return makespan;
  return (stepEnds.back() - stepEnds.front()) / double(stepEnds.size() - 1);
}

} // namespace mpc::plan
