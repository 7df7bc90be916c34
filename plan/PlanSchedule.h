//===- plan/PlanSchedule.h - a pipelined plan's schedule grid ----===//
//
// `mpc dump --schedule` draws, from the plan alone, which action each device
// runs at each step of the schedule, in the style of PyTorch's pipelining
// action tables: F3 / B3 (forward / backward of micro-batch 3, prefixed with
// the virtual stage when a device runs several: 2F3), U (optimizer update),
// with R before and S after an action that receives or sends. An action
// takes one step; a device waits for the actions whose data it receives.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <ostream>
#include <string>
#include <vector>

namespace mpc::plan {

struct ScheduleGrid {
  std::vector<std::string> devices;
  /// cells[step][device]: "R F3 S", "B0 S", "U", or "" when idle.
  std::vector<std::vector<std::string>> cells;
};

/// "F3", "B3", "U", or "2F3" with `withStage`.
std::string actionLabel(const Action &a, bool withStage);

/// Throws UserError when the plan carries no schedule (not pipelined).
ScheduleGrid scheduleGrid(const Plan &plan);

/// The grid as an aligned table (idle cells ".") or as CSV (a header
/// `step,<device>,...`, idle cells empty).
void printScheduleGrid(const ScheduleGrid &grid, std::ostream &os);
void writeScheduleCsv(const ScheduleGrid &grid, std::ostream &os);
/// The grid as Graphviz DOT (`mpc dump --format=dot`): one table, a row per
/// step and a column per device, forward cells green, backward blue, weight
/// gradients orange, the update grey, idle cells white.
void writeScheduleDot(const ScheduleGrid &grid, const std::string &title, std::ostream &os);

} // namespace mpc::plan
