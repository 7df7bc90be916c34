//===- tools/mpc/DumpCommand.cpp - `mpc dump` (placeholder) ---===//
#include "tools/mpc/Commands.h"

namespace mpc::tool {
void addDumpCommand(CLI::App &) {}
} // namespace mpc::tool
