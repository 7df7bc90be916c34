//===- runtime/train/Profile.cpp - `mpc run --profile` --------------------===//
#include "runtime/train/Profile.h"

#include "plan/CostModel.h"
#include "plan/StepSimulation.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

namespace mpc::runtime::train {

namespace {

/// One device's figures, summed over the steps kept.
struct DeviceTotals {
  int64_t windowNs = 0, busyNs = 0, recvNs = 0, collectiveNs = 0, sendNs = 0;
  struct Op {
    int64_t ns = 0;
    double flops = 0;
    int64_t runs = 0;
  };
  std::map<std::string, Op> ops;
};

struct Totals {
  int64_t steps = 0;
  std::vector<DeviceTotals> devices;
};

Totals sum(const plan::Plan &plan, const std::vector<plan::TraceSpan> &spans) {
  Totals t;
  t.devices.resize(plan.devices.size());
  std::vector<plan::DeviceBusy> busy = plan::deviceBusy(plan, spans);
  std::set<int64_t> steps;
  for (size_t d = 0; d < busy.size(); ++d) {
    t.devices[d].windowNs = busy[d].windowNs;
    t.devices[d].busyNs = busy[d].busyNs;
  }
  for (const plan::TraceSpan &s : spans) {
    if (s.device >= plan.devices.size()) continue;
    const plan::DeviceProgram &p = plan.devices[s.device];
    if (s.instr >= p.instrs.size()) continue;
    steps.insert(s.step);
    const plan::Instr &in = p.instrs[s.instr];
    DeviceTotals &d = t.devices[s.device];
    int64_t ns = s.end - s.begin;
    switch (in.kind) {
    case plan::InstrKind::Kernel: {
      DeviceTotals::Op &op = d.ops[in.op];
      op.ns += ns;
      op.flops += plan::kernelFlops(p, in);
      ++op.runs;
      break;
    }
    case plan::InstrKind::Recv: d.recvNs += ns; break;
    case plan::InstrKind::Send: d.sendNs += ns; break;
    case plan::InstrKind::Collective: d.collectiveNs += ns; break;
    }
  }
  t.steps = int64_t(steps.size());
  return t;
}

std::string timeText(double ns) {
  char buf[32];
  if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  return buf;
}

class Table {
public:
  explicit Table(std::ostream &os) : os_(os) {}

  /// A row of a measured and a predicted time per step, and their ratio.
  void row(const std::string &label, double measuredNs, double predictedNs,
           const std::string &note = "") {
    char ratio[32] = "-";
    bool far = false;
    if (predictedNs > 0 && measuredNs > 0) {
      // Marked by the ratio as printed, so that "0.50" is never marked.
      double r = std::round(measuredNs / predictedNs * 100) / 100;
      std::snprintf(ratio, sizeof ratio, "%.2f", r);
      far = r > 2 || r < 0.5;
    }
    far_ += far;
    char line[256];
    std::snprintf(line, sizeof line, "  %-26s %12s %12s %8s%s", label.c_str(),
                  timeText(measuredNs).c_str(), timeText(predictedNs).c_str(), ratio,
                  far ? " !" : "");
    os_ << line << note << "\n";
  }
  int far() const { return far_; }

private:
  std::ostream &os_;
  int far_ = 0;
};

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100 * part / whole : 0.0);
  return buf;
}

} // namespace

void printProfile(const plan::Plan &plan, const std::vector<plan::TraceSpan> &measured,
                  const std::vector<int> &rankOf, bool overlapped, std::ostream &os) {
  // Leave the first step out when there are several.
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const plan::TraceSpan &s : measured) {
    first = std::min(first, s.step);
    last = std::max(last, s.step);
  }
  std::vector<plan::TraceSpan> kept;
  for (const plan::TraceSpan &s : measured)
    if (last == first || s.step != first) kept.push_back(s);
  Totals m = sum(plan, kept);
  plan::SimulationOptions options;
  options.rankOf = rankOf;
  if (overlapped) options.steps = plan::kOverlappedSteps;
  plan::SimulatedStep sim = plan::simulateStep(plan, options);
  Totals p = sum(plan, plan::simulatedSpans(sim));
  if (overlapped)
    for (DeviceTotals &d : p.devices) d.windowNs = int64_t(sim.overlappedStep() * 1e9);
  if (m.steps == 0) {
    os << "profile: no instruction was recorded (a run of no steps, or devices whose runtime "
          "records no spans)\n";
    return;
  }
  const double perStep = 1.0 / double(m.steps);
  os << "profile: per step, over " << m.steps << " step" << (m.steps == 1 ? "" : "s")
     << (last != first ? " (the first, a warm-up, left out)" : "")
     << (overlapped ? ", overlapped" : "")
     << "; beside each measured figure the cost model's prediction (plan/CostModel.h) and "
        "measured/predicted, ! where they differ more than 2x\n";
  Table table(os);
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const plan::DeviceProgram &dev = plan.devices[d];
    const DeviceTotals &md = m.devices[d], &pd = p.devices[d];
    char head[160];
    std::snprintf(head, sizeof head, "device %-20s %12s %12s %8s", dev.device.c_str(), "measured",
                  "predicted", "ratio");
    os << head << "\n";
    double mw = double(md.windowNs) * perStep, pw = double(pd.windowNs);
    double mb = double(md.busyNs) * perStep, pb = double(pd.busyNs);
    table.row("step", mw, pw);
    table.row("busy (kernels)", mb, pb);
    table.row("idle (the bubble)", mw - mb, pw - pb,
              "   " + percent(mw - mb, mw) + " of the step measured, " + percent(pw - pb, pw) +
                  " predicted");
    table.row("blocked in receives", double(md.recvNs) * perStep, double(pd.recvNs));
    if (md.collectiveNs || pd.collectiveNs)
      table.row("in collectives", double(md.collectiveNs) * perStep, double(pd.collectiveNs));
    table.row("in sends", double(md.sendNs) * perStep, double(pd.sendNs));
    uint64_t sent = 0, received = 0, collected = 0;
    size_t sends = 0, recvs = 0, collectives = 0;
    for (const plan::Instr &in : dev.instrs) {
      if (in.kind == plan::InstrKind::Send && !in.inputs.empty()) {
        sent += dev.buffers.at(in.inputs[0]).bytes;
        ++sends;
      } else if (in.kind == plan::InstrKind::Recv) {
        received += dev.buffers.at(in.output).bytes;
        ++recvs;
      } else if (in.kind == plan::InstrKind::Collective && !in.inputs.empty()) {
        collected += dev.buffers.at(in.inputs[0]).bytes;
        ++collectives;
      }
    }
    os << "  sends " << byteSizeText(sent) << " in " << sends << ", receives "
       << byteSizeText(received) << " in " << recvs;
    if (collectives) os << ", " << collectives << " collectives over " << byteSizeText(collected);
    os << "\n";
    // The top ops by measured time.
    std::vector<std::pair<std::string, DeviceTotals::Op>> ops(md.ops.begin(), md.ops.end());
    std::sort(ops.begin(), ops.end(),
              [](const auto &a, const auto &b) { return a.second.ns > b.second.ns; });
    if (ops.size() > 5) ops.resize(5);
    for (const auto &[name, op] : ops) {
      double ns = double(op.ns) * perStep;
      auto it = pd.ops.find(name);
      double predicted = it == pd.ops.end() ? 0 : double(it->second.ns);
      char label[64], note[64];
      std::snprintf(label, sizeof label, "  %s x%lld", name.c_str(),
                    (long long)(op.runs / m.steps));
      std::snprintf(note, sizeof note, "   %.2f GFLOP/s",
                    op.ns > 0 ? op.flops / double(op.ns) : 0.0);
      table.row(label, ns, predicted, op.flops > 0 ? note : "");
    }
  }
  if (table.far())
    os << "profile: " << table.far() << " figure" << (table.far() == 1 ? " differs" : "s differ")
       << " from the cost model by more than 2x (!): its constants are a rough CPU core's "
          "(10 GFLOP/s, 10 GB/s, 5 us per transfer), so a mark shows where this machine or "
          "this plan departs from them\n";
  else
    os << "profile: every figure within 2x of the cost model\n";
}

} // namespace mpc::runtime::train
