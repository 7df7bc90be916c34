//===- passes/Pass.h - the pass interface and its context ---------------===//
//
// A pass transforms a Graph in place and reports whether it changed it. User
// level failures (an unknown group in --map, an unsatisfiable memory limit)
// are thrown as UserError naming the file and the node; passes never exit.
// Options come from the driver through PassOptions; statistics go to
// PassContext::stats and are printed by --stats / --pass-stats.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace mpc::passes {

/// Options shared by the passes; set by `mpc opt` / `mpc compile` flags.
struct PassOptions {
  /// --devices: the concrete devices the model may use, in order. Empty means
  /// "as many cpu devices as the model needs" (cpu:0, cpu:1, ...).
  std::vector<std::string> devices;
  /// --map group=device,...: explicit group mapping. Groups not mapped take
  /// devices[i] in order of first appearance.
  std::map<std::string, std::string> groupMap;
  /// --placement: "explicit" (annotations + propagation) or "auto".
  std::string placement = "explicit";
  /// --device-memory: per-device limit in bytes for auto placement (0: none).
  int64_t deviceMemory = 0;
  /// --optimizer / --lr overrides of the model's optimizer.
  std::optional<std::string> optimizer;
  std::optional<double> lr;
  /// --stats: passes that have something to say print it to PassContext::log.
  bool stats = false;
  /// --microbatches / --schedule / --in-flight overrides of the model's
  /// "pipeline".
  std::optional<int64_t> microbatches;
  std::optional<std::string> schedule;
  std::optional<int64_t> inFlight;
  /// --data-parallel / --zero / --bucket-size overrides of the model's
  /// "data_parallel" (docs/parallelism.md).
  std::optional<int64_t> dataParallel;
  std::optional<int> zero;
  std::optional<int64_t> bucketBytes;
  /// The default pipeline runs fuse-attention (--no-fuse-attention: not).
  bool fuseAttention = true;
  /// --precision override of the model's "precision" (ops::kPrecisions;
  /// passes/Autocast.cpp).
  std::optional<std::string> precision;
  /// --recompute: "none", "selective" or "full" (passes/Recompute.cpp).
  std::optional<std::string> recompute;
  /// Per device, a level that overrides `recompute` there (what
  /// compiler::compileWithinActivationBudget chose).
  std::map<std::string, std::string> recomputeOn;
};

/// The model's pipeline settings with the flags applied; throws UserError on
/// an unknown schedule, or an in-flight bound for a schedule without one.
ir::PipelineSpec effectivePipeline(const ir::Graph &g, const PassOptions &opts);

/// The model's data parallelism with the flags applied; throws UserError on
/// a replica count out of range, --zero=1 without replicas, or a bucket
/// size below one byte.
ir::DataParallelSpec effectiveDataParallel(const ir::Graph &g, const PassOptions &opts);

/// The model's precision with --precision applied; throws UserError on a
/// name not in ops::kPrecisions.
std::string effectivePrecision(const ir::Graph &g, const PassOptions &opts);

/// Named counters a pass reports (copies inserted, copies reused, ...).
struct PassStatistic {
  std::string pass, name;
  int64_t value = 0;
};

struct PassContext {
  PassOptions options;
  std::ostream *log = nullptr; ///< --stats output (stderr by default)
  std::vector<PassStatistic> statistics;
  void count(std::string_view pass, std::string_view name, int64_t delta = 1);
};

class Pass;
/// Creates a pass by its --passes name (passes/PassRegistry.h).
std::unique_ptr<Pass> createPass(std::string_view name, bool enableTestPasses);

class Pass {
public:
  virtual ~Pass() = default;
  /// kebab-case; the --passes name. Name and summary are the pass's line in
  /// passes/PassRegistry.def, given to it by createPass.
  std::string_view name() const { return name_; }
  std::string_view summary() const { return summary_; }
  /// Returns true when the graph changed.
  virtual bool run(ir::Graph &graph, PassContext &ctx) = 0;

private:
  friend std::unique_ptr<Pass> createPass(std::string_view name, bool enableTestPasses);
  std::string_view name_, summary_;
};

} // namespace mpc::passes
