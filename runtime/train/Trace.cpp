//===- runtime/train/Trace.cpp - a run as Chrome trace-event JSON ---------===//
#include "runtime/train/Trace.h"

#include "ops/OpSchema.h"
#include "plan/PlanSchedule.h"
#include "runtime/job/Gather.h"
#include "support/StrictJson.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

namespace mpc::runtime::train {

namespace {

using Json = nlohmann::ordered_json;

/// "matmul %h1", "send %z0 -> cpu:1", "recv %z0.to.cpu1 <- cpu:0",
/// "all_reduce %g.allreduce": how a slice is named.
std::string sliceName(const plan::Plan &p, const plan::DeviceProgram &d, const plan::Instr &in) {
  auto buffer = [&](uint32_t id) {
    return id < d.buffers.size() ? "%" + d.buffers[id].name : std::string("%?");
  };
  auto device = [&](uint32_t i) {
    return i < p.devices.size() ? p.devices[i].device : std::string("?");
  };
  switch (in.kind) {
  case plan::InstrKind::Kernel: return in.op + " " + buffer(in.output);
  case plan::InstrKind::Send:
    return "send " + (in.inputs.empty() ? "%?" : buffer(in.inputs[0])) + " -> " + device(in.peer);
  case plan::InstrKind::Recv: return "recv " + buffer(in.output) + " <- " + device(in.peer);
  case plan::InstrKind::Collective: return in.op + " " + buffer(in.output);
  }
  return "?";
}

const char *category(plan::InstrKind k) {
  switch (k) {
  case plan::InstrKind::Kernel: return "kernel";
  case plan::InstrKind::Send: return "send";
  case plan::InstrKind::Recv: return "recv";
  case plan::InstrKind::Collective: return "collective";
  }
  return "?";
}

/// A kernel's FLOPs by its op's cost rule (OpSchema::flopCount), over its
/// buffers' types.
double flopsOf(const plan::DeviceProgram &d, const plan::Instr &in) {
  const ops::OpSchema *schema = ops::lookupSchema(in.op);
  if (!schema || in.output >= d.buffers.size()) return 0;
  std::vector<ops::TensorType> operands;
  for (uint32_t b : in.inputs) {
    if (b >= d.buffers.size()) return 0;
    operands.push_back({d.buffers[b].dtype, d.buffers[b].shape});
  }
  ops::TensorType result{d.buffers[in.output].dtype, d.buffers[in.output].shape};
  return schema->flopCount(operands, result, in.attrs);
}

/// Per instruction of `d`: the arena bytes live while it runs (buffers
/// between their first write and their last read in the step).
std::vector<uint64_t> arenaLive(const plan::DeviceProgram &d) {
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> first(d.buffers.size(), kNone), last(d.buffers.size(), 0);
  auto touch = [&](uint32_t b, size_t i) {
    if (b >= d.buffers.size() || d.buffers[b].region != plan::Region::Arena) return;
    first[b] = std::min(first[b], i);
    last[b] = std::max(last[b], i);
  };
  for (size_t i = 0; i < d.instrs.size(); ++i) {
    const plan::Instr &in = d.instrs[i];
    for (uint32_t b : in.inputs) touch(b, i);
    if (in.kind != plan::InstrKind::Send) touch(in.output, i);
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

void Trace::alignClocks(job::ProcessGroup &group) {
  if (group.size() <= 1) return;
  constexpr int kRounds = 8;
  if (group.rank() == 0) {
    for (int r = 1; r < group.size(); ++r) {
      int64_t best = std::numeric_limits<int64_t>::max(), offset = 0;
      for (int k = 0; k < kRounds; ++k) {
        int64_t t0 = traceClockNs(), theirs = 0;
        group.sendBytes(r, &t0, sizeof t0);
        group.recvBytes(r, &theirs, sizeof theirs);
        int64_t t1 = traceClockNs();
        if (t1 - t0 < best) {
          best = t1 - t0;
          offset = theirs - (t0 + (t1 - t0) / 2);
        }
      }
      group.sendBytes(r, &offset, sizeof offset);
    }
    return;
  }
  for (int k = 0; k < kRounds; ++k) {
    int64_t ping = 0;
    group.recvBytes(0, &ping, sizeof ping);
    int64_t now = traceClockNs();
    group.sendBytes(0, &now, sizeof now);
  }
  group.recvBytes(0, &offsetNs_, sizeof offsetNs_);
}

void Trace::add(int64_t step, uint32_t device, const std::vector<InstrSpan> &spans) {
  for (InstrSpan s : spans) {
    s.begin -= offsetNs_;
    s.end -= offsetNs_;
    spans_.push_back({step, device, s});
  }
}

void Trace::gather(job::ProcessGroup &group) {
  for (int owner = 1; owner < group.size(); ++owner) {
    std::vector<uint8_t> bytes;
    if (group.rank() == owner) {
      bytes.resize(spans_.size() * sizeof(Recorded));
      if (!spans_.empty()) std::memcpy(bytes.data(), spans_.data(), bytes.size());
    }
    job::moveToRoot(group, owner, bytes);
    if (group.rank() != 0) continue;
    std::vector<Recorded> theirs(bytes.size() / sizeof(Recorded));
    if (!theirs.empty()) std::memcpy(theirs.data(), bytes.data(), theirs.size() * sizeof(Recorded));
    spans_.insert(spans_.end(), theirs.begin(), theirs.end());
  }
}

std::string Trace::json() const {
  Json events = Json::array();
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Recorded &r : spans_) origin = std::min(origin, r.span.begin);
  auto us = [&](int64_t ns) { return double(ns - origin) / 1000.0; };
  for (uint32_t d = 0; d < plan_.devices.size(); ++d) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"tid", 0},
                      {"args", {{"name", plan_.devices[d].device}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", d}, {"tid", 0},
                      {"args", {{"sort_index", d}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", d}, {"tid", 0},
                      {"args", {{"name", "instructions"}}}});
  }
  std::vector<std::vector<uint64_t>> live;
  for (const plan::DeviceProgram &d : plan_.devices) live.push_back(arenaLive(d));
  std::map<int64_t, int64_t> stepStart;
  // Flows pair by (step, channel): a send and its receive; a collective's
  // members (one channel base per collective).
  std::map<std::pair<int64_t, uint32_t>, std::pair<const Recorded *, const Recorded *>> transfers;
  std::map<std::pair<int64_t, uint32_t>, std::vector<const Recorded *>> collectives;
  for (const Recorded &r : spans_) {
    if (r.device >= plan_.devices.size()) continue;
    const plan::DeviceProgram &d = plan_.devices[r.device];
    if (r.span.instr >= d.instrs.size()) continue;
    const plan::Instr &in = d.instrs[r.span.instr];
    auto [it, fresh] = stepStart.emplace(r.step, r.span.begin);
    if (!fresh) it->second = std::min(it->second, r.span.begin);
    Json args = {{"step", r.step}, {"instr", r.span.instr}};
    if (in.kind == plan::InstrKind::Kernel) {
      args["bytes"] = in.output < d.buffers.size() ? d.buffers[in.output].bytes : 0;
      args["flops"] = flopsOf(d, in);
    } else {
      uint32_t b = in.kind == plan::InstrKind::Send && !in.inputs.empty() ? in.inputs[0] : in.output;
      args["bytes"] = b < d.buffers.size() ? d.buffers[b].bytes : 0;
    }
    if (in.action.kind != plan::Action::None) {
      args["action"] = plan::actionLabel(in.action, false);
      if (in.action.microbatch >= 0) args["microbatch"] = in.action.microbatch;
    }
    events.push_back({{"ph", "X"},
                      {"name", sliceName(plan_, d, in)},
                      {"cat", category(in.kind)},
                      {"pid", r.device},
                      {"tid", 0},
                      {"ts", us(r.span.begin)},
                      {"dur", us(r.span.end) - us(r.span.begin)},
                      {"args", args}});
    events.push_back({{"ph", "C"},
                      {"name", "arena bytes"},
                      {"pid", r.device},
                      {"ts", us(r.span.begin)},
                      {"args", {{"bytes", live[r.device][r.span.instr]}}}});
    if (in.kind == plan::InstrKind::Send) transfers[{r.step, in.channel}].first = &r;
    if (in.kind == plan::InstrKind::Recv) transfers[{r.step, in.channel}].second = &r;
    if (in.kind == plan::InstrKind::Collective) collectives[{r.step, in.channel}].push_back(&r);
  }
  // Each end inside its slice (at its middle), so that viewers bind it.
  uint64_t flowId = 0;
  auto middle = [&](const InstrSpan &s) { return (us(s.begin) + us(s.end)) / 2; };
  auto flow = [&](const Recorded &from, const Recorded &to, const char *cat) {
    ++flowId;
    events.push_back({{"ph", "s"}, {"name", cat}, {"cat", cat}, {"id", flowId},
                      {"pid", from.device}, {"tid", 0}, {"ts", middle(from.span)}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", cat}, {"cat", cat}, {"id", flowId},
                      {"pid", to.device}, {"tid", 0}, {"ts", middle(to.span)}});
  };
  for (const auto &[key, ends] : transfers)
    if (ends.first && ends.second) flow(*ends.first, *ends.second, "transfer");
  for (const auto &[key, members] : collectives) {
    // From the group's first member to each other.
    const plan::Instr &in = plan_.devices[members[0]->device].instrs[members[0]->span.instr];
    const Recorded *first = members[0];
    for (const Recorded *m : members)
      if (!in.group.empty() && m->device == in.group[0]) first = m;
    for (const Recorded *m : members)
      if (m != first) flow(*first, *m, "collective");
  }
  for (const auto &[step, start] : stepStart)
    events.push_back({{"ph", "i"}, {"s", "g"}, {"name", "step " + std::to_string(step)},
                      {"pid", 0}, {"tid", 0}, {"ts", us(start)}});
  Json out = {{"displayTimeUnit", "ms"},
              {"otherData", {{"model", plan_.model}, {"devices", plan_.devices.size()}}},
              {"traceEvents", events}};
  return out.dump() + "\n";
}

} // namespace mpc::runtime::train
