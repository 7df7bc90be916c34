//===- tools/mpc/main.cpp - the mpc driver ------------------------------===//
//
// Subcommand dispatch and the one place errors are turned into exit codes:
//   0 success, 1 user error (bad model, flags, plan or data file),
//   2 internal error (a bug in mpc: a verifier failure after a pass, a broken
//     invariant).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/BlasCore.h"
#include "runtime/job/ProcessGroup.h"
#include "support/Error.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/Flags.h"

#include <iostream>

namespace {

/// A process an MPI launcher started is a rank of a job whose other ranks
/// wait for it in MPI_Init: one that exits 0 without joining leaves them
/// waiting forever, while a failure makes the launcher end the job. Only
/// `mpc run` joins, so `what` (another command, --help, --version) fails
/// there: throws UserError when a launcher started this process.
void refuseUnderLauncher(const std::string &what) {
  std::string var = mpc::runtime::job::launcherVariable();
  if (!var.empty())
    throw mpc::UserError("", what,
                         "cannot be part of an MPI job: only `mpc run` joins one (" + var +
                             " is set: an MPI launcher started this process); run it without "
                             "mpirun");
}

} // namespace

int main(int argc, char **argv) {
  // Training runs sgemm: make sure OpenBLAS runs the kernels this CPU has
  // (it may re-execute mpc, before anything else happens; see BlasCore.h).
  if (argc > 1 && std::string(argv[1]) == "run") mpc::runtime::cpu::reexecWithFittingBlasCore(argv);
  CLI::App app{"mpc: a static graph compiler and executor for model-parallel training.\n\n"
               "Exit status: 0 success, 1 user error (bad model, flag, plan or data file),\n"
               "2 internal error (a bug in mpc).",
               "mpc"};
  app.set_version_flag("--version", std::string("mpc ") + MPC_VERSION +
                                         "\nallocator: " MPC_ALLOCATOR_NAME);
  app.require_subcommand(1);
  mpc::tool::addOptCommand(app);
  mpc::tool::addCompileCommand(app);
  mpc::tool::addRunCommand(app);
  mpc::tool::addDumpCommand(app);
  mpc::tool::addListCommands(app);
  mpc::tool::addImportMxnetCommand(app);
  mpc::tool::addImportOnnxCommand(app);
  // CLI11 would report a misspelt command as "A subcommand is required";
  // name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App *sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      std::cerr << "mpc: error: unknown command '" << argv[1] << "' (commands: " << known
                << ")\n";
      return 1;
    }
  }
  // After the parse, before any command runs.
  app.parse_complete_callback([&app] {
    for (const CLI::App *sub : app.get_subcommands())
      if (sub->get_name() != "run") refuseUnderLauncher("mpc " + sub->get_name());
  });
  try {
    mpc::tool::parseCommandLine(app, argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version are "errors" with exit code 0 in CLI11.
    if (e.get_exit_code() == 0) {
      try {
        refuseUnderLauncher(e.get_name() == "CallForVersion" ? "--version" : "--help");
      } catch (const mpc::UserError &refusal) {
        std::cerr << refusal.what() << "\n";
        return 1;
      }
    }
    int code = app.exit(e);
    return code == 0 ? 0 : 1;
  } catch (const mpc::UserError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const mpc::InternalError &e) {
    std::cerr << "mpc: internal error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc &) {
    std::cerr << "mpc: error: out of memory\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "mpc: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
