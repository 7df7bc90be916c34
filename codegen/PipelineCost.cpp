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
// The cost model: a kernel takes flops/F + bytes/B seconds (its op's FLOP
// count from the op table; the bytes of its operands and result), a transfer
// bytes/B + a fixed latency, with F = 10 GFLOP/s and B = 10 GB/s per device,
// and a collective starts when its last member comes to it and takes what
// codegen/CollectiveCost.h prices (the in-process transport on CPUs, NCCL
// on GPUs).
// Only ratios matter for a bubble fraction; the constants keep compute- and
// memory-bound kernels in proportion on a CPU core.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"

#include "codegen/CollectiveCost.h"
#include "ir/OpInfo.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace mpc::codegen {

namespace {

constexpr double kFlopsPerSecond = 1e10;
constexpr double kBytesPerSecond = 1e10;
constexpr double kTransferLatency = 5e-6;

double kernelSeconds(const ir::Graph &graph, const plan::DeviceProgram &d, const plan::Instr &in) {
  double bytes = double(d.buffers.at(in.output).bytes);
  for (uint32_t b : in.inputs) bytes += double(d.buffers.at(b).bytes);
  double flops = 0;
  if (const ir::Node *n = graph.find(in.node); n && n->isOp()) {
    std::vector<ir::TensorType> types;
    for (const ir::Node *x : n->inputs) types.push_back(x->type);
    flops = n->info().flopCount(types, n->type, n->attrs);
  }
  return flops / kFlopsPerSecond + bytes / kBytesPerSecond;
}

/// One step on the cost model; `priceCollectives` false makes every
/// collective free (it still waits for its last member).
struct StepSimulation {
  double makespan = 0;
  std::vector<double> busy;  ///< kernel seconds per device
  double collectiveSeconds = 0; ///< each collective once, at its price
};

StepSimulation simulateStep(const ir::Graph &graph, const plan::Plan &plan, bool priceCollectives) {
  const size_t nd = plan.devices.size();
  std::vector<size_t> pc(nd, 0);
  std::vector<double> clock(nd, 0), busy(nd, 0);
  std::map<uint32_t, double> arrival;
  double collectiveTotal = 0;
  // Collectives: when each member came, and when the collective ends.
  std::map<uint32_t, std::vector<double>> arrivals;
  std::set<std::pair<uint32_t, size_t>> arrived;
  std::map<uint32_t, double> finished;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 0; d < nd; ++d) {
      const plan::DeviceProgram &dev = plan.devices[d];
      for (; pc[d] < dev.instrs.size(); ++pc[d], progress = true) {
        const plan::Instr &in = dev.instrs[pc[d]];
        if (in.kind == plan::InstrKind::Kernel) {
          double s = kernelSeconds(graph, dev, in);
          clock[d] += s;
          busy[d] += s;
        } else if (in.kind == plan::InstrKind::Collective) {
          // A meeting: it ends the cost of the collective after its last
          // member comes (codegen/CollectiveCost.h; GPU groups on NCCL).
          auto done = finished.find(in.channel);
          if (done == finished.end()) {
            std::vector<double> &at = arrivals[in.channel];
            if (arrived.insert({in.channel, d}).second) at.push_back(clock[d]);
            if (at.size() < in.group.size()) break;
            bool gpu = dev.device.rfind("gpu:", 0) == 0;
            double s = collectiveSeconds(dev, uint32_t(d), in,
                                         gpu ? CollectiveTransport::Nccl
                                             : CollectiveTransport::InProcess);
            collectiveTotal += s;
            if (!priceCollectives) s = 0;
            done = finished.emplace(in.channel, *std::max_element(at.begin(), at.end()) + s).first;
          }
          clock[d] = std::max(clock[d], done->second);
        } else if (in.kind == plan::InstrKind::Send) {
          double bytes = double(dev.buffers.at(in.inputs.at(0)).bytes);
          arrival[in.channel] = clock[d] + kTransferLatency + bytes / kBytesPerSecond;
        } else {
          auto it = arrival.find(in.channel);
          if (it == arrival.end()) break;
          clock[d] = std::max(clock[d], it->second);
        }
      }
    }
  }
  StepSimulation sim;
  sim.makespan = *std::max_element(clock.begin(), clock.end());
  sim.busy = std::move(busy);
  sim.collectiveSeconds = collectiveTotal;
  return sim;
}

} // namespace

PipelineCost predictPipelineCost(const ir::Graph &graph, const plan::Plan &plan) {
  const size_t nd = plan.devices.size();
  StepSimulation sim = simulateStep(graph, plan, true);
  std::vector<double> &busy = sim.busy;
  PipelineCost c;
  c.makespan = sim.makespan;
  double work = 0;
  for (double b : busy) work += b;
  c.predictedBubble = c.makespan > 0 ? 1.0 - work / (double(nd) * c.makespan) : 0.0;
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

void printPipelineStats(const ir::Graph &graph, const plan::Plan &plan, std::ostream &os) {
  if (plan.pipeline.microbatches <= 1) return;
  PipelineCost c = predictPipelineCost(graph, plan);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "pipeline: %s, %lld micro-batches, %zu stages on %zu devices; bubble %.1f%% "
                "predicted by the cost model (step %.3g ms), %.1f%% analytic bound\n",
                plan.pipeline.schedule.c_str(), (long long)plan.pipeline.microbatches,
                plan.pipeline.stages.size(), c.stageDevices, 100 * c.predictedBubble,
                c.makespan * 1e3, 100 * c.analyticBubble);
  os << buf;
}


CollectiveOverlap predictCollectiveOverlap(const ir::Graph &graph, const plan::Plan &plan) {
  StepSimulation priced = simulateStep(graph, plan, true);
  StepSimulation free = simulateStep(graph, plan, false);
  CollectiveOverlap o;
  o.collectiveSeconds = priced.collectiveSeconds;
  o.makespan = priced.makespan;
  o.exposedSeconds = std::clamp(priced.makespan - free.makespan, 0.0, o.collectiveSeconds);
  o.hiddenShare = o.collectiveSeconds > 0 ? 1.0 - o.exposedSeconds / o.collectiveSeconds : 0.0;
  return o;
}

void printCollectiveOverlap(const ir::Graph &graph, const plan::Plan &plan, std::ostream &os) {
  CollectiveOverlap o = predictCollectiveOverlap(graph, plan);
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
