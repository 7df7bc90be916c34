//===- plan/TransferWalk.h - a plan's sends and receives, played --===//
//
// Plays a plan's send/recv structure once without running a kernel: each
// device in turn runs its list until a Recv finds no message (sends never
// wait), until no device can move. This answers two questions before the
// first step: does some device wait forever (a plan file is untrusted, and a
// step must never hang), how many bytes are in flight at once (what the
// in-process transport's shared buffers must hold: runtime/MessagePool.h),
// and how much work a step does per message (whether threads pay: see
// runtime/Executor.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpc::plan {

struct TransferWalk {
  /// A device stuck at a Recv whose send never comes: its index and the
  /// instruction's; `stuck` is false when every device reached its end.
  bool stuck = false;
  size_t device = 0, instr = 0;
  /// The largest sum of the sizes of messages sent and not yet received,
  /// over the walk (devices running ahead as far as they can, which is
  /// where the most messages wait).
  uint64_t peakBytesInFlight = 0;
  /// The largest single message.
  uint64_t largestMessage = 0;
  /// Sends of one step, all devices together.
  uint64_t messages = 0;
  /// A rough measure of a step's work: the elements every kernel reads and
  /// writes, summed.
  uint64_t kernelElements = 0;
};

TransferWalk walkTransfers(const Plan &plan);

/// One channel of a verified plan: the devices at its two ends. Channels of
/// a send/recv pair, and every message channel of a collective
/// (plan/Collective.h): what a transport sets up before the first step.
struct ChannelRoute {
  uint32_t channel = 0;
  uint32_t from = 0, to = 0; ///< device indices
};
/// Every channel of `plan`, ordered by id.
std::vector<ChannelRoute> channelRoutes(const Plan &plan);

} // namespace mpc::plan
