//===- codegen/LowerSteps.h - the steps of lowering, shared by its files -===//
//
// Lowering (Lower.cpp) is a sequence of steps, each in its own file:
//   Values.cpp     devices and buffers for every value, the user-visible
//                  tensor refs, the optimizer and the initial values;
//   Schedule.cpp   each device's instruction list (kernels, sends early,
//                  receives just before their first use);
//   Liveness.cpp   when each arena buffer is live;
//   InPlace.cpp    which results take over a dying operand's arena slot;
//   MemoryPlan.cpp offsets in the arena (best fit, reuse after death) and in
//                  the persistent region, with ArenaOccupancy.cpp, the
//                  index of the arena bytes taken over time.
// This header is internal to codegen/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "plan/Plan.h"
#include "support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mpc::codegen {

/// Where a value lives once lowered.
struct ValueSlot {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t device = kNone; ///< index in Plan::devices; kNone: no buffer yet
  uint32_t buffer = 0;     ///< buffer id on that device
};

/// State shared by the steps of one lowering. Per-node facts live in arrays
/// indexed by node id (ir::Graph::idBound), not in maps keyed by node: they
/// are looked up for every operand of every instruction, and an array keeps
/// that a load instead of a hash probe into a table as large as the graph.
struct LoweringState {
  const ir::Graph &graph;
  std::vector<ir::Node *> topo;            ///< execution order (orderNodes)
  std::map<std::string, uint32_t> devices; ///< "cpu:1" -> index in Plan::devices
  std::vector<uint32_t> deviceById;        ///< node id -> index in Plan::devices
  std::vector<ValueSlot> slots;            ///< node id -> its buffer (createBuffers)
  /// Pipelined plans: node id -> the schedule action the op node belongs to.
  std::vector<plan::Action> actions;
  plan::Plan plan;

  explicit LoweringState(const ir::Graph &g)
      : graph(g), slots(g.idBound()), actions(g.idBound()) {}
  uint32_t deviceOf(const ir::Node *n) const { return deviceById[size_t(n->id)]; }
  /// The buffer of `n`'s value; it must have one.
  const ValueSlot &slotOf(const ir::Node *n) const {
    const ValueSlot &s = slots[size_t(n->id)];
    MPC_ASSERT(s.device != ValueSlot::kNone, "no buffer for '" + n->name + "'");
    return s;
  }
};

// Values.cpp
/// Throws UserError unless every node sits on a concrete device and crosses
/// devices only through `copy`; fills `topo` and `devices`.
void checkAndCollectDevices(LoweringState &st);
void createBuffers(LoweringState &st);
void describeInterface(LoweringState &st);
void describeOptimizer(LoweringState &st);
void computeInitialValues(LoweringState &st, uint64_t seed);

// Schedule.cpp
/// Per node (creation index), the nodes that must run after it: its users,
/// and for a reader of a value that an optimizer updates in place, the update.
std::vector<std::vector<size_t>> executionSuccessors(const ir::Graph &graph);
/// Execution order of all nodes: topological, creation index breaking ties,
/// with every reader of a value that an optimizer updates in place ordered
/// before the update. Replaces `topo`.
void orderNodes(LoweringState &st);
void scheduleInstructions(LoweringState &st);

// PipelineSchedule.cpp
/// True when the graph was split into micro-batches (passes/Microbatch.cpp).
bool isPipelined(const ir::Graph &graph);
/// The execution order of a micro-batched graph under its pipeline schedule
/// (gpipe, 1f1b, interleaved-1f1b), found by simulating the devices; replaces
/// `topo` and fills `actions`, the schedule action of each op node.
void orderNodesPipelined(LoweringState &st);

// Liveness.cpp
/// An arena buffer is live from the first instruction that touches it (its
/// definition) to the last one (its last use), both inclusive.
struct LiveInterval {
  uint32_t buffer = 0;
  size_t begin = 0, end = 0;
};
/// Intervals of the arena buffers the program touches, in buffer id order.
std::vector<LiveInterval> computeLiveness(const plan::DeviceProgram &program);
inline bool overlapInTime(const LiveInterval &a, const LiveInterval &b) {
  return a.begin <= b.end && b.begin <= a.end;
}

// InPlace.cpp
/// Per buffer id, the buffer whose arena slot it takes over (itself when it
/// takes over none): the result of an in-place-able kernel takes the slot of
/// an operand of the same type that dies there, and chains resolve to their
/// first buffer.
std::vector<uint32_t> findInPlaceReuse(const plan::DeviceProgram &program,
                                       const std::vector<LiveInterval> &live);

// MemoryPlan.cpp
/// Assigns arena offsets (size-ordered, best fit among the gaps left by the
/// buffers live at the same time, 64-byte aligned); sets arenaBytes and
/// noReuseBytes. A buffer `b` with takes[b] != b gets takes[b]'s offset
/// (`takes` from findInPlaceReuse; empty: no buffer takes over another).
void planArena(plan::DeviceProgram &program, const std::vector<LiveInterval> &live,
               const std::vector<uint32_t> &takes = {});
/// Lays out the persistent buffers one after another; sets persistentBytes.
void planPersistent(plan::DeviceProgram &program);

} // namespace mpc::codegen
