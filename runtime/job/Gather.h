//===- runtime/job/Gather.h - bringing tensors to rank 0 ---------------===//
//
// Files of a job (checkpoints, --output arrays, --print-params) are written
// by rank 0 alone, so a failed or killed rank can never leave half a file
// and a multi-host job writes to one place. Between steps, each tensor goes
// from the rank that hosts its device to rank 0, in list order: every rank
// walks the same list, so the point-to-point moves always match. A sharded
// tensor (ZeRO-1 state) comes part by part, each from its own rank.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "io/Safetensors.h"
#include "runtime/Executor.h"
#include "runtime/job/ProcessGroup.h"

#include <cstdint>
#include <vector>

namespace mpc::runtime::job {

/// Collective: `bytes` of rank `owner` arrive in rank 0's `bytes` (the size
/// travels first). Ranks other than `owner` and 0 do nothing.
void moveToRoot(ProcessGroup &group, int owner, std::vector<uint8_t> &bytes);

/// Collective: the tensors `refs` as rank 0 sees them (read here or
/// received from their ranks); other ranks get an empty list.
std::vector<io::NamedTensor> gatherTensors(ProcessGroup &group, Executor &ex,
                                           const std::vector<int> &rankOf,
                                           const std::vector<plan::TensorRef> &refs);

} // namespace mpc::runtime::job
