//===- runtime/Collective.h - a collective instruction, run on host memory ===//
//
// A backend whose device memory the host can address runs a collective
// instruction (plan/Collective.h) as a short list of steps fixed at load:
// sends and receives over the plan's Transport, and local copies and f32
// additions. The additions follow ops/Collective.h's fixed order (the part
// this member reduces is c_0, then + c_1, + c_2, ... in the group's order), so
// every transport gives the same bits. Sends never wait, and a receive can be
// polled, so a device running a collective can pause at it and share a
// thread (runtime/Executor.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/Backend.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpc::runtime {

struct CollectiveStep {
  enum Kind : uint8_t {
    Send, ///< transport.send(channel, src, bytes)
    Recv, ///< transport.recv(channel, dst, bytes)
    Copy, ///< memcpy(dst, src, bytes)
    Add,  ///< dst[k] += src[k] for bytes / 4 floats
  };
  Kind kind = Copy;
  uint32_t channel = 0;
  const void *src = nullptr;
  void *dst = nullptr;
  size_t bytes = 0;
};

/// The f32 work space collective instruction `in` of device `device` needs
/// (a received contribution to the part it reduces).
size_t collectiveScratchFloats(const plan::Plan &plan, uint32_t device, const plan::Instr &in);

/// The steps of collective instruction `in` (verified) on device `device`,
/// whose contribution lies at `contribution` and result at `result` in host
/// memory, with `scratch` holding collectiveScratchFloats floats.
std::vector<CollectiveStep> expandCollective(const plan::Plan &plan, uint32_t device,
                                             const plan::Instr &in, const void *contribution,
                                             void *result, float *scratch);

/// Runs `steps` from `cursor` on. With `poll`, a receive whose message has
/// not come returns false, leaving `cursor` at it; otherwise receives block.
/// Returns true at the end (and resets `cursor` to 0).
bool runCollective(Transport &transport, const std::vector<CollectiveStep> &steps,
                   size_t &cursor, bool poll, DeviceStats &stats);

} // namespace mpc::runtime
