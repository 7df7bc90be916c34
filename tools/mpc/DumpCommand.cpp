//===- tools/mpc/DumpCommand.cpp - `mpc dump`: a plan, readably ----------===//
//
// Reads plan.bin with the same checked reader the runtime uses and prints it
// with plan::printPlan: the header, the user-visible tensors, then each
// device's instruction list and buffers. A truncated, corrupted, foreign or
// newer file is a UserError naming the file and the section.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan/PlanIO.h"
#include "tools/mpc/Commands.h"

#include <iostream>
#include <memory>

namespace mpc::tool {

void addDumpCommand(CLI::App &app) {
  auto path = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand("dump", "Print an execution plan (plan.bin) readably");
  cmd->add_option("plan", *path, "Plan file written by mpc compile")->required();
  cmd->callback([path] {
    plan::Plan p = plan::readPlanFile(*path);
    plan::printPlan(p, std::cout);
  });
}

} // namespace mpc::tool
