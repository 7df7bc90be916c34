//===- tools/mpc/RunLoop.h - `mpc run`'s step loop -----------------------===//
//
// The loop that `mpc run` drives once the flags are checked, the plan is
// loaded and the start position is known (step 0, or a checkpoint's): each
// step takes its batch rows in the data order (file order, or the seeded
// shuffle of each epoch, replayed up to the start position so a resumed run
// sees the rows an uninterrupted run would), runs the plan, collects
// outputs, prints the loss lines and writes periodic checkpoints.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Executor.h"
#include "runtime/io/Checkpoint.h"
#include "tools/mpc/RunInputs.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::tool {

/// A plan output collected over the steps (--output).
struct Collected {
  const plan::TensorRef *ref = nullptr;
  std::string file;
  std::vector<uint8_t> bytes;
};

struct LoopSettings {
  std::string planFile;   ///< names the plan in step errors
  int64_t totalSteps = 0; ///< the step count to reach (not the number to run)
  int64_t logEvery = 100;
  int64_t saveEvery = 0;  ///< write `checkpoint` every K steps; 0: never
  std::string checkpoint; ///< the --save path periodic checkpoints go to
  /// The start position, the plan's identity and the data order; the loop
  /// advances info.position as it goes (after the loop: totalSteps).
  runtime::io::CheckpointInfo info;
};

/// Runs steps info.position.step + 1 .. totalSteps (1-based, as printed).
void runSteps(runtime::Executor &ex, std::vector<Dataset> &data, std::vector<Collected> &outputs,
              LoopSettings &settings);

/// The position after `step` steps of `batchesPerEpoch` each.
void setStep(runtime::io::TrainingPosition &pos, int64_t step);

} // namespace mpc::tool
