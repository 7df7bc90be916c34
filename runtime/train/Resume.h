//===- runtime/train/Resume.h - load a checkpoint into the devices ------===//
//
// `mpc run --resume`: a checkpoint (io/Checkpoint.h) checked against the
// plan it is to resume and loaded into the devices an executor hosts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "io/Checkpoint.h"
#include "runtime/Executor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::runtime {

/// How --resume treats a checkpoint from a different plan.
struct ResumeCheck {
  std::vector<std::string> warnings; ///< printed as notes by the caller
};

/// Checks that `ckpt` can resume `plan` (whose file checksum is
/// `planChecksum`) and loads its parameters and state into the devices `ex`
/// hosts (in a job of several ranks, each loads its own):
///   * a checkpoint that records this plan's checksum was written by this
///     plan, so a tensor missing, extra or of another dtype or shape means a
///     damaged file: an error naming the tensor and what differs, which
///     --force does not cover;
///   * the parameters must match by name, dtype and shape, always;
///   * a different checksum is an error, unless `force` and the difference
///     is the optimizer (its kind, hyper-parameters or state tensors): then
///     state tensors that match by name, dtype and shape are loaded, and the
///     plan's others keep their initial values (each named in a warning);
///   * a NaN or an infinity in a tensor is damage too (mpc writes none).
/// Errors are UserErrors naming the file and what differs.
ResumeCheck restoreCheckpoint(Executor &ex, const io::Checkpoint &ckpt, uint64_t planChecksum,
                              bool force);

/// The checks of restoreCheckpoint alone, loading nothing: what --resume
/// would say of `ckpt` against `plan`.
ResumeCheck checkCheckpoint(const plan::Plan &plan, const io::Checkpoint &ckpt,
                            uint64_t planChecksum, bool force);

} // namespace mpc::runtime
