//===- plan/Collective.h - a collective instruction's messages ------------===//
//
// A collective instruction (InstrKind::Collective) over a group of R devices
// runs on every transport as point-to-point messages between its members, in
// two phases, each message on a channel id of its own:
//
//   phase 0 (all_reduce, reduce_scatter): member j sends part i of its
//     contribution to member i, for every i != j; member i sums part i of
//     every contribution in the group's order (ops/Collective.h);
//   phase 1 (all_reduce, all_gather): member j sends its part of the result
//     to every other member, which places it at part j.
//
// Parts are ops::partOf of the tensor the collective splits
// (ops::collectiveElements). Every sum is made by one member, in one fixed
// order, so the result does not depend on the transport, on thread timing or
// on how devices spread over processes. A collective with base channel c
// over R devices owns the channel ids [c, c + 2·R·R): phase p's message from
// member j to member i is c + p·R·R + j·R + i. The verifier proves that no
// two instructions share an id.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Collective.h"
#include "plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mpc::plan {

/// The collective named `op` ("all_reduce", ...), or nullopt.
std::optional<ops::OpKind> collectiveKind(const std::string &op);

/// Channel ids a collective over `groupSize` devices owns from its base.
constexpr uint64_t collectiveChannels(size_t groupSize) {
  return 2 * uint64_t(groupSize) * uint64_t(groupSize);
}

/// The channel of phase `phase`'s message from member `from` to member `to`.
constexpr uint32_t collectiveChannel(const Instr &in, int phase, size_t from, size_t to) {
  size_t r = in.group.size();
  return uint32_t(in.channel + uint64_t(phase) * r * r + from * r + to);
}

/// One message a member sends or receives, in the order the member runs them.
struct CollectiveMessage {
  bool send = false;
  uint32_t channel = 0;
  uint32_t peer = 0;        ///< the other member's device index (Plan::devices)
  int phase = 0;
  ops::ElementRange part;   ///< elements of the split tensor (ops::collectiveElements)
  uint64_t bytes = 0;
};

/// Where a member is in its group, and what it splits.
struct CollectiveShape {
  ops::OpKind kind = ops::OpKind::AllReduce;
  size_t member = 0;       ///< this device's position in the group
  int64_t elements = 0;    ///< of the tensor split into parts
  uint64_t elementBytes = 4;
};

/// `in` (a verified Collective instruction of `device`): its kind, member
/// position and split size.
CollectiveShape collectiveShape(const DeviceProgram &device, uint32_t deviceIndex,
                                const Instr &in);

/// Every message member `s.member` of `in` sends or receives, in protocol
/// order: phase 0's sends, then its receives in group order; phase 1's
/// sends, then its receives in group order.
std::vector<CollectiveMessage> collectiveMessages(const Instr &in, const CollectiveShape &s);

} // namespace mpc::plan
