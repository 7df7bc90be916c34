//===- runtime/train/Trainer.h - the training loop ----------------------===//
//
// Everything `mpc run` does once its flags are parsed, as a library: read
// the plan, give its devices to the ranks of the job (runtime/job/), check
// that every rank starts the same run, load the datasets and the start
// position (a fresh run, --init weights or a --resume checkpoint), then step:
// each step takes its batch rows in the data order (file order, or the
// seeded shuffle of each epoch, replayed up to the start position so a
// resumed run sees the rows an uninterrupted run would), runs the plan,
// collects outputs, prints the loss lines and writes periodic checkpoints.
// At the end it writes the --output arrays and the --save checkpoint. A loss
// that is not finite stops the run (exit 1) at its step, and no checkpoint
// is written with a non-finite value: --save keeps the last good one.
//
// In a job of several ranks every rank runs the same Trainer on the devices
// it hosts. The rank that hosts the loss prints the loss lines and the
// progress line; rank 0 prints notes and writes every file, after gathering
// the tensors it does not host (runtime/job/Gather.h). The data order is a
// function of the seed alone, so it is the same on every rank.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "io/Checkpoint.h"
#include "io/Npy.h"
#include "runtime/Executor.h"
#include "runtime/job/ProcessGroup.h"
#include "runtime/train/Datasets.h"
#include "runtime/train/Trace.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mpc::runtime::train {

/// What a run is asked to do; the `mpc run` flags of the same names
/// (docs/runtime.md).
struct TrainOptions {
  std::string planFile;
  std::vector<std::string> inputs;  ///< NAME=FILE.npy
  std::map<std::string, io::NpyArray> arrays; ///< in-memory datasets (benchmarks, tests)
  std::vector<std::string> outputs; ///< NAME=FILE.npy
  int64_t epochs = 0, steps = 0;    ///< 0: not given
  bool shuffle = false, shuffleGiven = false;
  uint64_t seed = 0;
  bool seedGiven = false;
  std::string init, resume, save;
  bool force = false, saveParamsOnly = false, printParams = false;
  /// --allow-nonfinite: take float datasets with NaN or infinities as they are.
  bool allowNonfinite = false;
  /// --trace FILE.json: every instruction of every step as Chrome trace-event
  /// JSON (runtime/train/Trace.h), written by rank 0 at the end.
  std::string trace;
  /// --profile: print per device where each step's time went, next to the
  /// cost model's prediction (runtime/train/Profile.h), on rank 0 at the end.
  bool profile = false;
  int64_t saveEvery = 0;
  int64_t logEvery = 100;
  std::string rankMap; ///< --rank-map; empty: contiguous blocks
  unsigned threads = 0; ///< --threads: threads running this process's devices (0: the cores)
  bool progress = false; ///< draw the progress line (stderr is a terminal)
  /// Other settings every rank must share (the driver's backend flags),
  /// checked at start-up with the ones above.
  std::vector<std::pair<std::string, std::string>> agreeAlso;
};

/// Which rank hosts each device of the plan, and which of them are here.
struct Placement {
  std::vector<int> rankOf; ///< by device index
  std::vector<bool> hosted;
};

/// Makes this rank's executor for the plan (the driver chooses the backend).
using ExecutorMaker =
    std::function<std::unique_ptr<Executor>(plan::Plan, const Placement &, job::ProcessGroup &)>;

/// The CPU runtime: every hosted device on the CPU backend, the group's
/// transport, at most `threads` threads (0: the cores; Executor).
std::unique_ptr<Executor> makeCpuExecutor(plan::Plan plan, const Placement &placement,
                                          job::ProcessGroup &group, unsigned threads);
/// makeCpuExecutor as an ExecutorMaker.
ExecutorMaker cpuExecutorMaker(unsigned threads = 0);

class Trainer {
public:
  /// Loss lines go to `out`, notes, warnings and the progress line to `err`.
  Trainer(TrainOptions options, job::ProcessGroup &group, ExecutorMaker make,
          std::ostream &out, std::ostream &err);
  ~Trainer();

  /// prepare(), runSteps(), finish().
  void run();
  /// Reads the plan and the data, agrees with the other ranks, builds the
  /// executor and sets the start position.
  void prepare();
  /// Runs the steps after the start position up to the total (1-based, as
  /// printed).
  void runSteps();
  /// Writes the --output arrays, the --save checkpoint and --print-params.
  void finish();

  Executor &executor() { return *executor_; }
  int64_t totalSteps() const { return total_; }
  const io::TrainingPosition &position() const { return info_.position; }
  /// "rank 1 (cpu:2, cpu:3)", for messages of a job of several ranks.
  std::string whoAmI() const;

private:
  struct Collected {
    const plan::TensorRef *ref = nullptr;
    std::string file;
    std::vector<uint8_t> bytes;
  };
  void checkFlags() const;
  void agree(const plan::Plan &p);
  void agreeOnRows(int64_t &rows, const std::string &rowsFile);
  void placeDevices(const plan::Plan &p);
  void loadStart();
  /// Writes --save from `params` (gathered to rank 0), gathering the state;
  /// `params` is unchanged afterwards. A tensor holding a NaN or an infinity
  /// stops the run instead: the file keeps the last good checkpoint.
  void writeCheckpoint(std::vector<io::NamedTensor> &params);
  /// What became of --save when the run stops early, for its message.
  std::string keptCheckpoint() const;
  void note(const std::string &line, int rank = 0);

  TrainOptions opt_;
  job::ProcessGroup &group_;
  ExecutorMaker make_;
  std::ostream &out_, &err_;

  uint64_t checksum_ = 0;
  Placement placement_;
  std::string devicesHere_;
  std::unique_ptr<Executor> executor_;
  std::vector<Dataset> data_;
  std::vector<Collected> outputs_;
  int64_t total_ = 0, first_ = 0;
  int64_t savedStep_ = -1; ///< the step of the last checkpoint this run wrote; -1: none
  int lossRank_ = 0;
  io::CheckpointInfo info_;
  std::unique_ptr<io::Checkpoint> resumeFrom_;
  std::unique_ptr<Trace> trace_; ///< --trace or --profile
  bool overlapped_ = false;      ///< the steps ran overlapped (Executor::runSteps)
};

/// The position after `step` steps of `pos.batchesPerEpoch` each.
void setStep(io::TrainingPosition &pos, int64_t step);

} // namespace mpc::runtime::train
