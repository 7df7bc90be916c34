//===- tools/mpc/CommonOptions.h - flags shared by opt and compile ------===//
#pragma once

#include "compiler/Compile.h"
#include "support/FileIO.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mpc::tool {

/// The pass-manager and pass flags of `mpc opt` and `mpc compile`.
struct CommonOptions {
  std::string passes; ///< --passes; empty: the command's default
  std::vector<std::string> printBefore, printAfter;
  bool printBeforeAll = false, printAfterAll = false;
  bool noVerify = false, timePasses = false, enableTestPasses = false;
  bool stats = false;
  std::string reproducer;
  std::vector<std::string> devices;
  std::vector<std::string> map;
  std::string placement = "explicit";
  std::string deviceMemory;
  std::string optimizer;
  double lr = 0;
  bool lrGiven = false;
  std::optional<int64_t> microbatches; ///< unset: the model's
  bool microbatchesAuto = false;       ///< --microbatches=auto (mpc compile chooses)
  std::string schedule;     ///< "": the model's
  std::optional<int64_t> inFlight; ///< unset: the model's, else the schedule's own
  std::string recompute;    ///< "": none
  bool fuseAttention = true; ///< --no-fuse-attention turns it off
  std::string precision;    ///< "": the model's
  std::optional<int64_t> dataParallel; ///< unset: the model's
  std::optional<int> zero;             ///< unset: 0
  std::string bucketSize;              ///< "": 25MiB

  void addTo(CLI::App &cmd);
  /// The files these flags make the command write (--reproducer), to check
  /// with the command's own before any work (checkOutputTargets).
  std::vector<OutputTarget> outputTargets() const;
  /// Validates the flag values and turns them into the compiler's options
  /// (passes run when --passes is not given: `fallback`); throws UserError
  /// naming the flag. Logs go to stderr.
  compiler::CompileOptions compileOptions(compiler::DefaultPipeline fallback) const;

private:
  passes::PassOptions passOptions() const;
  passes::Instrumentation instrumentation() const;
};

/// Reads MODEL and runs the compiler's passes on it (compiler::runPasses);
/// prints the pass statistics under --stats.
std::unique_ptr<ir::Graph> runPasses(const std::string &modelPath,
                                     const compiler::CompileOptions &options);

} // namespace mpc::tool
