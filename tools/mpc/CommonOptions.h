//===- tools/mpc/CommonOptions.h - flags shared by opt and compile ------===//
#pragma once

#include "passes/PassManager.h"

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
  std::string schedule;     ///< "": the model's

  void addTo(CLI::App &cmd);
  /// Validates the flag values and turns them into pass options; throws
  /// UserError naming the flag.
  passes::PassOptions passOptions() const;
  passes::Instrumentation instrumentation() const;
};

/// Reads MODEL, runs `pipeline` with the flags, returns the graph.
std::unique_ptr<ir::Graph> runPipeline(const std::string &modelPath, const CommonOptions &opts,
                                       const std::string &defaultPipelineOverride,
                                       bool useDefaultTrainingPipeline);

/// Parses "123", "64KiB", "16MiB", "2GiB", "1.5GB"; throws UserError.
int64_t parseByteSize(const std::string &text, const std::string &flag);

} // namespace mpc::tool
