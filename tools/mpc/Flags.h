//===- tools/mpc/Flags.h - the command lines of run and compile ---------===//
//
// The flags of `mpc run` and `mpc compile` as data, apart from the work:
// add*Flags declares a subcommand and its flags on a CLI11 app, a parse
// (parseCommandLine) fills the *Args and does nothing else, and the finish
// functions check what no single flag's validator can see. RunCommand.cpp
// and CompileCommand.cpp act on the result; the flag fuzzer
// (test/fuzz/FlagParserFuzz.cpp) only parses.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Compile.h"
#include "runtime/train/Trainer.h"
#include "tools/mpc/CommonOptions.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace mpc::tool {

/// Parses argv (argv[0]: the program) into what `app` declares, as CLI11
/// does, after refusing a "--flag=" with nothing after the '=' (CLI11 would
/// take the next argument as its value). Runs the callbacks `app`'s
/// subcommands set: none for the flags of this file alone. Throws
/// CLI::ParseError (--help and --version too) or UserError.
void parseCommandLine(CLI::App &app, int argc, const char *const *argv);

/// `mpc run`'s flags.
struct RunArgs {
  runtime::train::TrainOptions train;
  std::string backend = "auto"; ///< auto, cpu, cuda
  std::string deviceMap, transport;
  bool allowTf32 = false;
  bool cudaGraphs = false;
  bool saveGiven = false; ///< --save, even as "" (which is refused)
};

/// Declares `mpc run` and its flags on `app`; returns the subcommand.
CLI::App *addRunFlags(CLI::App &app, RunArgs &args);
/// After a parse that selected `cmd` (addRunFlags'): notes which flags were
/// given (--shuffle, --seed, --save), refuses an empty --init or --resume,
/// an unknown --transport and --cuda-graphs with --trace or --profile.
/// Throws UserError naming the flag.
void finishRunFlags(const CLI::App &cmd, RunArgs &args);

/// `mpc compile`'s flags.
struct CompileArgs {
  std::string model, output, emit = "plan";
  uint64_t seed = 0;
  bool noInPlace = false;
  std::string activationBudget; ///< "": none
  std::string tracePredicted;   ///< --trace-predicted FILE.json; "": none
  CommonOptions common;
};

/// Declares `mpc compile` and its flags on `app`; returns the subcommand.
CLI::App *addCompileFlags(CLI::App &app, CompileArgs &args);
/// After a parse that selected `mpc compile`: the compiler's options (the
/// training pipeline unless --passes; lowering with --seed and
/// --no-inplace). Throws UserError naming the flag.
compiler::CompileOptions finishCompileFlags(const CompileArgs &args);

} // namespace mpc::tool
