//===- tools/mpc/Commands.h - the subcommands of the mpc driver ---------===//
//
// Each subcommand lives in its own file and registers itself on the CLI11
// app with one function; its callback does the work and throws UserError or
// InternalError, which main() turns into a message and an exit status. The
// flags of run and compile are declared apart from the work, in Flags.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <CLI/CLI.hpp>

namespace mpc::tool {

void addOptCommand(CLI::App &app);     ///< OptCommand.cpp
void addCompileCommand(CLI::App &app); ///< CompileCommand.cpp
void addRunCommand(CLI::App &app);     ///< RunCommand.cpp
void addDumpCommand(CLI::App &app);    ///< DumpCommand.cpp
void addListCommands(CLI::App &app);   ///< ListCommand.cpp (ops, passes)
void addImportMxnetCommand(CLI::App &app); ///< ImportMxnetCommand.cpp
void addImportOnnxCommand(CLI::App &app);  ///< ImportOnnxCommand.cpp

} // namespace mpc::tool
