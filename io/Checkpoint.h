//===- io/Checkpoint.h - training checkpoints -------------------===//
//
// A checkpoint is a safetensors file holding every parameter and every
// optimizer state tensor of a plan (Adam moments, momentum buffers, step
// counters), plus string metadata that says where training stood: the step,
// the epoch and the position in it, the data order (shuffle and seed, dataset
// size), the plan's checksum, its optimizer and the mpc version. Resuming
// from it continues the run bit for bit (docs/runtime.md, "Checkpoints").
//
// Only strings may go in safetensors metadata, so numbers are written in
// decimal and read back strictly. The file stays a plain safetensors file
// that safetensors.torch.load_file reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "io/Safetensors.h"
#include "plan/Plan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mpc::io {

/// Where a training run stands after `step` steps.
struct TrainingPosition {
  int64_t step = 0;            ///< steps completed (the next step printed is step + 1)
  int64_t epoch = 0;           ///< epochs completed: step / batchesPerEpoch
  int64_t epochStep = 0;       ///< steps done in the current epoch: step % batchesPerEpoch
  int64_t batchesPerEpoch = 1; ///< fixed by the dataset size and the batch
  int64_t datasetRows = -1;    ///< rows of each input dataset; -1 when fed whole
  bool shuffle = false;
  uint64_t shuffleSeed = 0;
};

/// What a checkpoint records besides its tensors.
struct CheckpointInfo {
  TrainingPosition position;
  uint64_t planChecksum = 0;
  /// What the plan computes, whatever its layout (plan::Plan::modelChecksum); 0: unknown.
  uint64_t modelChecksum = 0;
  std::string model;     ///< the plan's model name, for messages
  std::string optimizer; ///< describeOptimizer() of the plan that wrote it
  std::string version;   ///< the mpc version that wrote it
  std::vector<std::string> states; ///< names of the optimizer state tensors
};

/// A checkpoint read back: tensors by name and the recorded info.
struct Checkpoint {
  std::string file;
  std::vector<NamedTensor> tensors; ///< sorted by name
  bool resumable = false;           ///< false: parameters only (--save-params-only, other tools)
  CheckpointInfo info;              ///< valid when resumable
};

/// "adam beta1=0.9 beta2=0.999 decoupled=false eps=1e-08 lr=0.001
/// weight_decay=0": the optimizer of a plan as one comparable string, from
/// its update instructions' attributes ("none" without one; distinct
/// settings joined by "; ").
std::string describeOptimizer(const plan::Plan &plan);

/// Writes `tensors` (every parameter, then every state tensor, as
/// gathered from the devices) and `info` as metadata, atomically
/// (support/FileIO.h).
void writeCheckpoint(const std::string &path, const std::vector<NamedTensor> &tensors,
                     const CheckpointInfo &info);
/// Writes parameters only, with no training metadata (for export).
void writeParamsOnly(const std::string &path, const std::vector<NamedTensor> &params);

/// Reads a safetensors file; `resumable` when it carries mpc's training
/// metadata. Malformed metadata is a UserError naming the file and the key.
Checkpoint readCheckpoint(const std::string &path);
/// The same from bytes in memory; `file` is used in messages only.
Checkpoint parseCheckpoint(const uint8_t *data, size_t size, const std::string &file);

} // namespace mpc::io
