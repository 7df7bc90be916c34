//===- plan/TraceEvents.cpp - a plan's timeline as Chrome trace-event JSON ===//
#include "plan/TraceEvents.h"

#include "plan/CostModel.h"
#include "plan/PlanSchedule.h"
#include "support/StrictJson.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>

namespace mpc::plan {

namespace {

using Json = nlohmann::ordered_json;

/// "matmul %h1", "send %z0 -> cpu:1", "recv %z0.to.cpu1 <- cpu:0",
/// "all_reduce %g.allreduce": how a slice is named.
std::string sliceName(const Plan &p, const DeviceProgram &d, const Instr &in) {
  auto buffer = [&](uint32_t id) {
    return id < d.buffers.size() ? "%" + d.buffers[id].name : std::string("%?");
  };
  auto device = [&](uint32_t i) {
    return i < p.devices.size() ? p.devices[i].device : std::string("?");
  };
  switch (in.kind) {
  case InstrKind::Kernel: return in.op + " " + buffer(in.output);
  case InstrKind::Send:
    return "send " + (in.inputs.empty() ? "%?" : buffer(in.inputs[0])) + " -> " + device(in.peer);
  case InstrKind::Recv: return "recv " + buffer(in.output) + " <- " + device(in.peer);
  case InstrKind::Collective: return in.op + " " + buffer(in.output);
  }
  return "?";
}

/// Per instruction of `d`: the arena bytes live while it runs (buffers
/// between their first write and their last read in the step).
std::vector<uint64_t> arenaLive(const DeviceProgram &d) {
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> first(d.buffers.size(), kNone), last(d.buffers.size(), 0);
  auto touch = [&](uint32_t b, size_t i) {
    if (b >= d.buffers.size() || d.buffers[b].region != Region::Arena) return;
    first[b] = std::min(first[b], i);
    last[b] = std::max(last[b], i);
  };
  for (size_t i = 0; i < d.instrs.size(); ++i) {
    const Instr &in = d.instrs[i];
    for (uint32_t b : in.inputs) touch(b, i);
    if (in.kind != InstrKind::Send) touch(in.output, i);
  }
  std::vector<int64_t> delta(d.instrs.size() + 1, 0);
  for (size_t b = 0; b < d.buffers.size(); ++b) {
    if (first[b] == kNone) continue;
    delta[first[b]] += int64_t(d.buffers[b].bytes);
    delta[last[b] + 1] -= int64_t(d.buffers[b].bytes);
  }
  std::vector<uint64_t> live(d.instrs.size());
  int64_t sum = 0;
  for (size_t i = 0; i < d.instrs.size(); ++i) live[i] = uint64_t(sum += delta[i]);
  return live;
}

} // namespace

std::vector<DeviceBusy> deviceBusy(const Plan &plan, const std::vector<TraceSpan> &spans) {
  std::vector<DeviceBusy> out(plan.devices.size());
  std::map<int64_t, std::pair<int64_t, int64_t>> window; // step -> first begin, last end
  std::map<int64_t, std::vector<bool>> ran;              // step -> devices with a span
  for (const TraceSpan &s : spans) {
    if (s.device >= plan.devices.size() || s.instr >= plan.devices[s.device].instrs.size())
      continue;
    auto [it, fresh] = window.emplace(s.step, std::make_pair(s.begin, s.end));
    if (!fresh) {
      it->second.first = std::min(it->second.first, s.begin);
      it->second.second = std::max(it->second.second, s.end);
    }
    std::vector<bool> &r = ran[s.step];
    r.resize(plan.devices.size());
    r[s.device] = true;
    if (plan.devices[s.device].instrs[s.instr].kind == InstrKind::Kernel)
      out[s.device].busyNs += s.end - s.begin;
  }
  for (auto it = window.begin(); it != window.end(); ++it) {
    const auto &[step, w] = *it;
    // Overlapped steps (Executor::runSteps): the next step began before
    // this one ended, and this one's share of the time ends there.
    auto next = std::next(it);
    int64_t end = next != window.end() ? std::min(w.second, next->second.first) : w.second;
    for (size_t d = 0; d < out.size(); ++d)
      if (ran[step][d]) {
        out[d].windowNs += end - w.first;
        ++out[d].steps;
      }
  }
  return out;
}

std::string traceEventJson(const Plan &plan, const std::vector<TraceSpan> &spans,
                           const std::string &source) {
  Json events = Json::array();
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TraceSpan &s : spans) origin = std::min(origin, s.begin);
  auto us = [&](int64_t ns) { return double(ns - origin) / 1000.0; };
  std::vector<DeviceBusy> busy = deviceBusy(plan, spans);
  Json bubble = Json::object();
  for (uint32_t d = 0; d < plan.devices.size(); ++d) {
    const DeviceBusy &b = busy[d];
    double idle = b.windowNs > 0 ? 1.0 - double(b.busyNs) / double(b.windowNs) : 0.0;
    char label[128];
    std::snprintf(label, sizeof label, "busy %.3f ms per step, idle %.1f%% (bubble)",
                  b.steps ? double(b.busyNs) / 1e6 / double(b.steps) : 0.0, 100 * idle);
    bubble[plan.devices[d].device] = idle;
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"tid", 0},
                      {"args", {{"name", plan.devices[d].device}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", d}, {"tid", 0},
                      {"args", {{"sort_index", d}}}});
    events.push_back({{"ph", "M"}, {"name", "process_labels"}, {"pid", d}, {"tid", 0},
                      {"args", {{"labels", label}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", d}, {"tid", 0},
                      {"args", {{"name", "instructions"}}}});
  }
  std::vector<std::vector<uint64_t>> live;
  for (const DeviceProgram &d : plan.devices) live.push_back(arenaLive(d));
  std::map<int64_t, int64_t> stepStart;
  // Flows pair by (step, channel): a send and its receive; a collective's
  // members (one channel base per collective).
  std::map<std::pair<int64_t, uint32_t>, std::pair<const TraceSpan *, const TraceSpan *>> transfers;
  std::map<std::pair<int64_t, uint32_t>, std::vector<const TraceSpan *>> collectives;
  for (const TraceSpan &r : spans) {
    if (r.device >= plan.devices.size()) continue;
    const DeviceProgram &d = plan.devices[r.device];
    if (r.instr >= d.instrs.size()) continue;
    const Instr &in = d.instrs[r.instr];
    auto [it, fresh] = stepStart.emplace(r.step, r.begin);
    if (!fresh) it->second = std::min(it->second, r.begin);
    Json args = {{"step", r.step}, {"instr", r.instr}};
    if (in.kind == InstrKind::Kernel) {
      args["bytes"] = in.output < d.buffers.size() ? d.buffers[in.output].bytes : 0;
      args["flops"] = kernelFlops(d, in);
    } else {
      uint32_t b = in.kind == InstrKind::Send && !in.inputs.empty() ? in.inputs[0] : in.output;
      args["bytes"] = b < d.buffers.size() ? d.buffers[b].bytes : 0;
    }
    if (in.action.kind != Action::None) {
      args["action"] = actionLabel(in.action, false);
      if (in.action.microbatch >= 0) args["microbatch"] = in.action.microbatch;
    }
    events.push_back({{"ph", "X"},
                      {"name", sliceName(plan, d, in)},
                      {"cat", instrKindName(in.kind)},
                      {"pid", r.device},
                      {"tid", 0},
                      {"ts", us(r.begin)},
                      {"dur", us(r.end) - us(r.begin)},
                      {"args", args}});
    events.push_back({{"ph", "C"},
                      {"name", "arena bytes"},
                      {"pid", r.device},
                      {"ts", us(r.begin)},
                      {"args", {{"bytes", live[r.device][r.instr]}}}});
    if (in.kind == InstrKind::Send) transfers[{r.step, in.channel}].first = &r;
    if (in.kind == InstrKind::Recv) transfers[{r.step, in.channel}].second = &r;
    if (in.kind == InstrKind::Collective) collectives[{r.step, in.channel}].push_back(&r);
  }
  // Each end inside its slice (at its middle), so that viewers bind it.
  uint64_t flowId = 0;
  auto middle = [&](const TraceSpan &s) { return (us(s.begin) + us(s.end)) / 2; };
  auto flow = [&](const TraceSpan &from, const TraceSpan &to, const char *cat) {
    ++flowId;
    events.push_back({{"ph", "s"}, {"name", cat}, {"cat", cat}, {"id", flowId},
                      {"pid", from.device}, {"tid", 0}, {"ts", middle(from)}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", cat}, {"cat", cat}, {"id", flowId},
                      {"pid", to.device}, {"tid", 0}, {"ts", middle(to)}});
  };
  for (const auto &[key, ends] : transfers)
    if (ends.first && ends.second) flow(*ends.first, *ends.second, "transfer");
  for (const auto &[key, members] : collectives) {
    // From the group's first member to each other.
    const Instr &in = plan.devices[members[0]->device].instrs[members[0]->instr];
    const TraceSpan *first = members[0];
    for (const TraceSpan *m : members)
      if (!in.group.empty() && m->device == in.group[0]) first = m;
    for (const TraceSpan *m : members)
      if (m != first) flow(*first, *m, "collective");
  }
  for (const auto &[step, start] : stepStart)
    events.push_back({{"ph", "i"}, {"s", "g"}, {"name", "step " + std::to_string(step)},
                      {"pid", 0}, {"tid", 0}, {"ts", us(start)}});
  Json out = {{"displayTimeUnit", "ms"},
              {"otherData",
               {{"model", plan.model},
                {"devices", plan.devices.size()},
                {"source", source},
                {"bubble", bubble}}},
              {"traceEvents", events}};
  return out.dump() + "\n";
}

std::vector<TraceSpan> simulatedSpans(const SimulatedStep &sim) {
  std::vector<TraceSpan> spans;
  auto ns = [](double seconds) { return int64_t(seconds * 1e9 + 0.5); };
  for (uint32_t d = 0; d < sim.spans.size(); ++d)
    for (const SimulatedSpan &s : sim.spans[d])
      spans.push_back({1, d, s.instr, ns(s.begin), ns(s.end)});
  return spans;
}

std::string predictedTraceEventJson(const Plan &plan) {
  return traceEventJson(plan, simulatedSpans(simulateStep(plan)), "predicted by the cost model");
}

} // namespace mpc::plan
