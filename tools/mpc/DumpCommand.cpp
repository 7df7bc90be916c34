//===- tools/mpc/DumpCommand.cpp - `mpc dump`: a plan, readably ----------===//
//
// Reads plan.bin with the same checked reader the runtime uses and prints it:
//   (default)          plan::printPlan: the header, the user-visible tensors,
//                      each device's instruction list and buffers;
//   --format=json      the structured part as one JSON document, for scripts;
//   --schedule         a pipelined plan's step x device grid (F3, B3, S, R, U);
//   --schedule --format=csv  the same grid as CSV;
//   --format=dot       the same grid as a Graphviz picture (dot -Tsvg).
// A truncated, corrupted, foreign or newer file is a UserError naming the
// file and the section.
//
//===----------------------------------------------------------------------===//
#include "plan/PlanIO.h"
#include "plan/PlanSchedule.h"
#include "support/Error.h"
#include "tools/mpc/Commands.h"

#include <iostream>
#include <memory>

namespace mpc::tool {

namespace {
struct DumpArgs {
  std::string plan, format = "text";
  bool schedule = false;
};
} // namespace

void addDumpCommand(CLI::App &app) {
  auto args = std::make_shared<DumpArgs>();
  CLI::App *cmd = app.add_subcommand("dump", "Print an execution plan (plan.bin) readably");
  cmd->add_option("plan", args->plan, "Plan file written by mpc compile")->required();
  cmd->add_flag("--schedule", args->schedule,
                "Print a pipelined plan's schedule: one row per step, one column per device "
                "(F3/B3 forward/backward of micro-batch 3, R receive, S send, U update)");
  cmd->add_option("--format", args->format,
                  "text (default), json (the plan's structured part; without --schedule), "
                  "csv (with --schedule) or dot (the schedule grid as a Graphviz picture)")
      ->check(CLI::IsMember({"text", "json", "csv", "dot"}));
  cmd->callback([args] {
    if (args->format == "dot") args->schedule = true; // the picture is the grid
    if (args->format == "csv" && !args->schedule)
      throw UserError("", "", "--format=csv is for --schedule; use --format=json for the plan");
    if (args->format == "json" && args->schedule)
      throw UserError("", "", "--schedule prints as text or csv, not json");
    plan::Plan p = plan::readPlanFile(args->plan);
    if (args->schedule) {
      plan::ScheduleGrid grid;
      try {
        grid = plan::scheduleGrid(p);
      } catch (const UserError &e) {
        throw UserError(args->plan, e.where(), e.message());
      }
      if (args->format == "csv") plan::writeScheduleCsv(grid, std::cout);
      else if (args->format == "dot")
        plan::writeScheduleDot(grid,
                               p.model + ": " + p.pipeline.schedule + ", " +
                                   std::to_string(p.pipeline.microbatches) + " micro-batches" +
                                   (p.pipeline.inFlight > 0
                                        ? ", at most " + std::to_string(p.pipeline.inFlight) +
                                              " in flight"
                                        : std::string()),
                               std::cout);
      else plan::printScheduleGrid(grid, std::cout);
    } else if (args->format == "json") {
      std::cout << plan::planMetaJson(p);
    } else {
      plan::printPlan(p, std::cout);
    }
  });
}

} // namespace mpc::tool
