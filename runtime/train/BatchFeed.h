//===- runtime/train/BatchFeed.h - each step's batch, device by device ---===//
//
// A step's batch takes its rows in the data order: file order, or with
// --shuffle a seeded permutation per epoch, each permuting the previous
// epoch's order again (so a resumed run replays the shuffles before its
// start). Under overlapped steps (Executor::runSteps) each device writes its
// own inputs as it starts a step, on its own thread, and up to two steps are
// in flight. In file order a step's rows lie together in the dataset and
// are written from there. Shuffled, the feed gathers a step's rows once,
// for the first device to start it, into one of two slots, and the slot is
// reused two steps later, when the executor's window guarantees every
// device has written from it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Executor.h"
#include "runtime/train/Datasets.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <random>
#include <span>
#include <vector>

namespace mpc::runtime::train {

class BatchFeed {
public:
  /// Feeds `data` (each dataset's batch rows, or the whole array when its
  /// batch is 0) from step `first` + 1 on, with the order of `rows` dataset
  /// rows, `batchesPerEpoch` steps per epoch, shuffled or not by `seed`.
  /// `data` outlives the feed.
  BatchFeed(std::vector<Dataset> &data, int64_t rows, int64_t batchesPerEpoch, bool shuffle,
            uint64_t seed, int64_t first);
  /// Writes the inputs on device `device` of step `step` (1-based): a
  /// runSteps `before` hook. Steps come in order per device, at most two
  /// apart across devices.
  void write(Executor &ex, uint32_t device, int64_t step);
  /// Writes every input hosted here of step `step`, between steps.
  void writeAll(Executor &ex, int64_t step);

private:
  /// Stages every step up to `step` (mutex_ held).
  void stageUpTo(int64_t step);
  /// Dataset `i`'s bytes of step `step`: in place, or (shuffled) staged
  /// first if no device has yet.
  std::span<const uint8_t> bytes(size_t i, int64_t step);
  void beginEpoch();

  std::vector<Dataset> &data_;
  int64_t batchesPerEpoch_;
  bool shuffle_;
  std::mt19937_64 rng_;
  std::vector<int64_t> perm_; ///< the row order in effect
  int64_t staged_;            ///< the last step staged
  /// Shuffled, per dataset: the rows of steps of each parity.
  std::vector<std::array<std::vector<uint8_t>, 2>> slots_;
  std::mutex mutex_;
};

} // namespace mpc::runtime::train
