//===- tools/mpc/RunCommand.cpp - `mpc run` (placeholder) ---===//
#include "tools/mpc/Commands.h"

namespace mpc::tool {
void addRunCommand(CLI::App &) {}
} // namespace mpc::tool
