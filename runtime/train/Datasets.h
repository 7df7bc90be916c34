//===- runtime/train/Datasets.h - the trainer's datasets and weight files -===//
//
// What the trainer reads and writes besides the plan: NPY datasets cut into
// the batches the plan's inputs take (the first axis is the dataset; a
// remainder smaller than a batch is dropped), and parameters loaded from
// safetensors or printed. In a job of several ranks each rank reads only
// the datasets of the inputs its devices consume, and writes only the
// parameters it hosts. Every problem is a UserError naming the file or flag.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "io/Npy.h"
#include "io/Safetensors.h"
#include "plan/Plan.h"
#include "runtime/Executor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mpc::runtime::train {

/// "'x', 'y'" (or "none"): the names of plan tensors, for messages.
std::string namesOf(const std::vector<plan::TensorRef> &list);
/// Splits "name=path"; `flag` names the option in errors.
std::pair<std::string, std::string> splitSpec(const std::string &spec, const std::string &flag);

/// One dataset input: the whole NPY array and the plan tensor it feeds.
struct Dataset {
  const plan::TensorRef *ref = nullptr;
  std::string file;
  io::NpyArray array;
  size_t rowBytes = 0; ///< bytes of one dataset row (a batch is batch rows)
  int64_t batch = 0;   ///< rows per step; 0 for a rank-0 input fed whole
  std::vector<uint8_t> staging; ///< a rank-0 input's bytes, fed every step
};

/// Reads the --input NAME=FILE specs, one dataset per plan input, checked
/// against the plan's types. Every input must have a spec (or an array in
/// `arrays`, which benchmarks and tests fill in memory), but only inputs for
/// which `wanted` is true are read. `rows` is the common dataset size of the
/// inputs read (-1 when there are none, or every one is fed whole), and
/// `rowsFile` names the file it came from. A float32 dataset holding a NaN
/// or an infinity is an error naming the file and the first such value's
/// flat index, unless `allowNonfinite` (--allow-nonfinite): one bad value
/// turns the loss and then every weight into NaN, far from its cause.
std::vector<Dataset> loadInputs(const plan::Plan &p, const std::vector<std::string> &specs,
                                const std::map<std::string, io::NpyArray> &arrays,
                                const std::function<bool(const plan::TensorRef &)> &wanted,
                                bool allowNonfinite, int64_t &rows, std::string &rowsFile);

/// The flat index of the first NaN or infinity among the `count` float
/// values of `dtype` (f32, bf16 or f16) at `data`, or -1 when every one is
/// finite.
int64_t firstNonFinite(const uint8_t *data, size_t count,
                       plan::DType dtype = plan::DType::F32);

/// A float as loss lines and listings print it: "%.6g", and "nan", "inf" or
/// "-inf" when it is not finite (C's printf shows a NaN's sign bit, which
/// means nothing, as "-nan").
std::string valueText(double v);

/// Seeded Fisher-Yates with an explicit generator, so the order is the same
/// on every platform and standard library.
void shuffleRows(std::vector<int64_t> &perm, std::mt19937_64 &rng);

/// --init: every parameter (optimizer state and batch_norm's running
/// statistics optionally) from a safetensors file, written into the devices
/// `ex` hosts. Returns warnings: optimizer state or running statistics the
/// plan has and the file lacks, state of another optimizer in the file
/// (skipped), a checkpoint's position that --init does not continue. Running
/// statistics an inference plan lacks in the file are an error: it
/// normalises with them.
std::vector<std::string> loadInit(Executor &ex, const std::string &file);
/// --print-params: name, type and up to 16 values of each tensor.
void printParams(const std::vector<io::NamedTensor> &params, std::ostream &os);

} // namespace mpc::runtime::train
