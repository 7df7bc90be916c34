//===- plan/PlanSchedule.cpp - a pipelined plan's schedule grid --===//
//
// Each device's list is cut into action groups: a maximal run of
// instructions labelled with the same action. Unlabelled instructions (a
// parameter's send before the first action) join the group they sit in, or
// the next one. Groups are then placed on a step axis: a group starts one
// step after the previous group of its device, and one step after every
// group holding a send that it receives. The plan is deadlock-free (the
// verifier checked), so every group gets a step.
//
//===----------------------------------------------------------------------===//
#include "plan/PlanSchedule.h"

#include "support/Error.h"

#include <algorithm>
#include <map>

namespace mpc::plan {

std::string actionLabel(const Action &a, bool withStage) {
  switch (a.kind) {
  case Action::None: return "";
  case Action::Update: return "U";
  case Action::Forward:
  case Action::Backward:
  case Action::WeightGrad:
    return (withStage ? std::to_string(a.stage) : std::string()) +
           (a.kind == Action::Forward ? "F" : a.kind == Action::Backward ? "B" : "W") +
           std::to_string(a.microbatch);
  }
  return "?";
}

namespace {

struct Group {
  Action action;
  bool recv = false, send = false;
  std::vector<uint32_t> recvChannels, sendChannels;
  int64_t step = -1;
};

std::vector<Group> groupsOf(const DeviceProgram &d) {
  std::vector<Group> groups(1);
  for (const Instr &in : d.instrs) {
    Group *g = &groups.back();
    if (in.action.kind != Action::None) {
      if (g->action.kind != Action::None && !(g->action == in.action)) {
        groups.emplace_back();
        g = &groups.back();
      }
      g->action = in.action;
    }
    if (in.kind == InstrKind::Recv) g->recvChannels.push_back(in.channel);
    if (in.kind == InstrKind::Send) g->sendChannels.push_back(in.channel);
  }
  if (groups.back().action.kind == Action::None && groups.back().recvChannels.empty() &&
      groups.back().sendChannels.empty())
    groups.pop_back();
  return groups;
}

} // namespace

ScheduleGrid scheduleGrid(const Plan &plan) {
  if (plan.pipeline.microbatches <= 1)
    throw UserError("", "pipeline", "the plan is not pipelined (compile with --microbatches)");
  std::vector<std::vector<Group>> groups;
  std::map<uint32_t, std::pair<size_t, size_t>> sender; // channel -> (device, group)
  std::map<uint32_t, int> stagesPerDevice;
  for (uint32_t s : plan.pipeline.stages) ++stagesPerDevice[s];
  bool withStage = false;
  for (const auto &[d, n] : stagesPerDevice) withStage |= n > 1;

  for (size_t d = 0; d < plan.devices.size(); ++d) {
    groups.push_back(groupsOf(plan.devices[d]));
    for (size_t g = 0; g < groups[d].size(); ++g)
      for (uint32_t c : groups[d][g].sendChannels) sender[c] = {d, g};
  }
  std::vector<size_t> next(plan.devices.size(), 0);
  std::vector<int64_t> free(plan.devices.size(), 0);
  int64_t steps = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 0; d < groups.size(); ++d) {
      while (next[d] < groups[d].size()) {
        Group &g = groups[d][next[d]];
        int64_t start = free[d];
        bool ready = true;
        for (uint32_t c : g.recvChannels) {
          auto it = sender.find(c);
          if (it == sender.end()) continue;
          const Group &from = groups[it->second.first][it->second.second];
          if (it->second.first == d) continue;
          if (from.step < 0) {
            ready = false;
            break;
          }
          start = std::max(start, from.step + 1);
        }
        if (!ready) break;
        g.step = start;
        free[d] = start + 1;
        steps = std::max(steps, start + 1);
        ++next[d];
        progress = true;
      }
    }
  }
  for (size_t d = 0; d < groups.size(); ++d)
    if (next[d] < groups[d].size())
      throw UserError("", "pipeline", "cannot draw the schedule: device " +
                                          plan.devices[d].device + " waits forever");

  ScheduleGrid grid;
  for (const DeviceProgram &d : plan.devices) grid.devices.push_back(d.device);
  grid.cells.assign(size_t(steps), std::vector<std::string>(plan.devices.size()));
  for (size_t d = 0; d < groups.size(); ++d)
    for (const Group &g : groups[d]) {
      std::string cell = actionLabel(g.action, withStage);
      if (!g.recvChannels.empty()) cell = cell.empty() ? "R" : "R " + cell;
      if (!g.sendChannels.empty()) cell = cell.empty() ? "S" : cell + " S";
      grid.cells[size_t(g.step)][d] = cell;
    }
  return grid;
}

void printScheduleGrid(const ScheduleGrid &grid, std::ostream &os) {
  std::vector<size_t> width;
  for (size_t d = 0; d < grid.devices.size(); ++d) {
    size_t w = std::max<size_t>(grid.devices[d].size(), 1);
    for (const auto &row : grid.cells) w = std::max(w, row[d].size());
    width.push_back(w);
  }
  auto line = [&](const std::string &first, const std::vector<std::string> &cells) {
    std::string out = first;
    out.resize(std::max<size_t>(out.size(), 4), ' ');
    for (size_t d = 0; d < cells.size(); ++d) {
      std::string c = cells[d].empty() ? "." : cells[d];
      out += "  " + c;
      if (d + 1 < cells.size()) out += std::string(width[d] - c.size(), ' ');
    }
    os << out << "\n";
  };
  line("step", grid.devices);
  for (size_t s = 0; s < grid.cells.size(); ++s) line(std::to_string(s), grid.cells[s]);
}

void writeScheduleCsv(const ScheduleGrid &grid, std::ostream &os) {
  os << "step";
  for (const std::string &d : grid.devices) os << "," << d;
  os << "\n";
  for (size_t s = 0; s < grid.cells.size(); ++s) {
    os << s;
    for (const std::string &c : grid.cells[s]) os << "," << c;
    os << "\n";
  }
}

namespace {

/// HTML-like label text: &, < and > escaped.
std::string htmlText(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

/// A cell's colour by the action it holds (its last letter-led word: "R F3
/// S" is a forward; "2B1" a backward of virtual stage 2).
const char *cellColour(const std::string &cell) {
  for (char c : cell) {
    if (c == 'F') return "#c6efce";
    if (c == 'B') return "#c9daf8";
    if (c == 'W') return "#fce5cd";
    if (c == 'U') return "#d9d9d9";
  }
  return "#ffffff";
}

} // namespace

void writeScheduleDot(const ScheduleGrid &grid, const std::string &title, std::ostream &os) {
  os << "digraph schedule {\n"
     << "  node [shape=plaintext, fontname=\"Helvetica\", fontsize=10];\n"
     << "  grid [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" "
        "cellpadding=\"4\">\n"
     << "    <tr><td colspan=\"" << grid.devices.size() + 1 << "\"><b>" << htmlText(title)
     << "</b></td></tr>\n"
     << "    <tr><td><b>step</b></td>";
  for (const std::string &d : grid.devices) os << "<td><b>" << htmlText(d) << "</b></td>";
  os << "</tr>\n";
  for (size_t s = 0; s < grid.cells.size(); ++s) {
    os << "    <tr><td>" << s << "</td>";
    for (const std::string &c : grid.cells[s])
      os << "<td bgcolor=\"" << cellColour(c) << "\">" << (c.empty() ? " " : htmlText(c))
         << "</td>";
    os << "</tr>\n";
  }
  os << "  </table>>];\n}\n";
}

} // namespace mpc::plan
