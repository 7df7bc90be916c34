//===- codegen/PipelineCost.cpp - a step on the cost model ----------------===//
//
// `mpc compile --stats` runs the plan's instruction lists on a cost model
// and predicts two things:
//   * on a pipelined plan, the bubble, the share of device time spent
//     waiting, next to the analytic bound of the schedule family:
//     (p-1)/(M+p-1) for GPipe and 1F1B, (p-1)/(v*M+p-1) interleaved,
//     (p-1)/(3M+p-1) for zb-h1 and 0 for zb-h2, with p devices, M
//     micro-batches and v virtual stages per device;
//   * on a plan with collectives, the share of their time the rest of the
//     step hides: the step is simulated twice, with the collectives priced
//     and free (still meetings of their groups), and what the step gains
//     from free collectives is their exposed time. A collective runs on its
//     device's worker, so it hides behind the other devices' work (a
//     pipelined replica's earlier stages still in backward), not its own
//     device's.
//
// Both come from one step on the cost model (plan/StepSimulation.h, whose
// prices plan/CostModel.h states). Only ratios matter for a bubble fraction.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"

#include "plan/StepSimulation.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace mpc::codegen {


PipelineCost predictPipelineCost(const plan::Plan &plan) {
  const size_t nd = plan.devices.size();
  // One run of overlapped steps gives both figures: its first step is the
  // single step (a device's later steps never change an earlier one's).
  plan::SimulationOptions overlapped;
  overlapped.steps = plan::kOverlappedSteps;
  plan::SimulatedStep sim = plan::simulateStep(plan, overlapped);
  PipelineCost c;
  c.makespan = sim.makespan;
  double work = 0;
  for (double b : sim.busy) work += b;
  c.predictedBubble = c.makespan > 0 ? 1.0 - work / (double(nd) * c.makespan) : 0.0;
  c.overlappedStep = sim.overlappedStep();
  c.overlappedBubble =
      c.overlappedStep > 0 ? std::max(0.0, 1.0 - work / (double(nd) * c.overlappedStep)) : 0.0;
  std::set<uint32_t> stageDevices(plan.pipeline.stages.begin(), plan.pipeline.stages.end());
  c.stageDevices = stageDevices.size();
  double p = double(std::max<size_t>(c.stageDevices, 1));
  double v = plan.pipeline.schedule == "interleaved-1f1b"
                 ? double(plan.pipeline.stages.size()) / p
                 : 1.0;
  double m = double(plan.pipeline.microbatches);
  // Zero-bubble schedules, with F, B and W of equal cost (Qi et al.): the
  // chain back through the stages carries B alone, 1 of 3 units (zb-h1);
  // zb-h2 fills the rest too.
  if (plan.pipeline.schedule == "zb-h1") c.analyticBubble = (p - 1) / (3 * m + p - 1);
  else if (plan.pipeline.schedule == "zb-h2") c.analyticBubble = 0;
  else c.analyticBubble = (p - 1) / (v * m + p - 1);
  return c;
}

void printPipelineStats(const plan::Plan &plan, std::ostream &os) {
  if (plan.pipeline.microbatches <= 1) return;
  PipelineCost c = predictPipelineCost(plan);
  std::string schedule = plan.pipeline.schedule;
  if (plan.pipeline.inFlight > 0)
    schedule += " (at most " + std::to_string(plan.pipeline.inFlight) + " in flight)";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "pipeline: %s, %lld micro-batches, %zu stages on %zu devices; bubble %.1f%% "
                "predicted by the cost model (step %.3g ms), %.1f%% analytic bound; "
                "overlapped steps %.1f%% (step %.3g ms)\n",
                schedule.c_str(), (long long)plan.pipeline.microbatches,
                plan.pipeline.stages.size(), c.stageDevices, 100 * c.predictedBubble,
                c.makespan * 1e3, 100 * c.analyticBubble, 100 * c.overlappedBubble,
                c.overlappedStep * 1e3);
  os << buf;
}


CollectiveOverlap predictCollectiveOverlap(const plan::Plan &plan) {
  plan::SimulatedStep priced = plan::simulateStep(plan);
  plan::SimulationOptions freeCollectives;
  freeCollectives.priceCollectives = false;
  plan::SimulatedStep free = plan::simulateStep(plan, freeCollectives);
  CollectiveOverlap o;
  o.collectiveSeconds = priced.collectiveSeconds;
  o.makespan = priced.makespan;
  o.exposedSeconds = std::clamp(priced.makespan - free.makespan, 0.0, o.collectiveSeconds);
  o.hiddenShare = o.collectiveSeconds > 0 ? 1.0 - o.exposedSeconds / o.collectiveSeconds : 0.0;
  return o;
}

void printCollectiveOverlap(const plan::Plan &plan, std::ostream &os) {
  CollectiveOverlap o = predictCollectiveOverlap(plan);
  if (o.collectiveSeconds <= 0) return;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "collectives: %.1f us per step predicted, %.0f%% of it hidden behind other "
                "devices' work (%.1f us exposed of a %.1f us step)\n",
                o.collectiveSeconds * 1e6, 100 * o.hiddenShare, o.exposedSeconds * 1e6,
                o.makespan * 1e6);
  os << buf;
}

} // namespace mpc::codegen
