//===- codegen/MemoryPlan.cpp - arena and persistent offsets -------------===//
//
// Arena: the greedy-by-size assignment (as in TFLite's and MXNet's memory
// planners). Buffers are taken largest first (ties: earlier definition, then
// lower id); each goes into the smallest gap, between the buffers already
// placed whose live ranges overlap its own, that can hold it (best fit), or
// after the last of them when no gap is large enough. Every offset and every
// spacing is a multiple of 64 bytes. Two buffers live at the same time never
// share a byte; a buffer whose owner has died is reused. noReuseBytes is
// what giving every buffer its own bytes would take. The taken bytes are
// looked up in an interval index (ArenaOccupancy.h), so planning does not
// compare each buffer with every placed one.
//
// A result that runs in place (InPlace.cpp) takes over its operand's slot: a
// chain of such buffers is placed as one rectangle, from the first
// definition to the last use, and every buffer of the chain gets its offset.
//
// Persistent region: params, state, inputs, outputs and the loss keep their
// bytes for the whole run, laid out in buffer id order.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerSteps.h"

#include "codegen/ArenaOccupancy.h"

#include "plan/PlanFormat.h"

#include <algorithm>
#include <optional>

namespace mpc::codegen {

void planArena(plan::DeviceProgram &program, const std::vector<LiveInterval> &live,
               const std::vector<uint32_t> &takes) {
  using plan::alignUp;
  uint64_t noReuse = 0;
  for (const LiveInterval &l : live) noReuse += alignUp(program.buffers[l.buffer].bytes);
  // One rectangle per chain of buffers that take over each other's slot,
  // named by its first buffer (the one that takes over nothing).
  std::vector<LiveInterval> slots;
  std::vector<size_t> slotOf(program.buffers.size(), ~size_t(0));
  for (const LiveInterval &l : live) {
    uint32_t root = takes.empty() ? l.buffer : takes[l.buffer];
    if (slotOf[root] == ~size_t(0)) {
      slotOf[root] = slots.size();
      slots.push_back({root, l.begin, l.end});
    }
    LiveInterval &s = slots[slotOf[root]];
    s.begin = std::min(s.begin, l.begin);
    s.end = std::max(s.end, l.end);
  }
  std::vector<const LiveInterval *> order;
  for (const LiveInterval &l : slots) order.push_back(&l);
  auto size = [&](const LiveInterval *l) { return alignUp(program.buffers[l->buffer].bytes); };
  std::stable_sort(order.begin(), order.end(), [&](const LiveInterval *a, const LiveInterval *b) {
    if (size(a) != size(b)) return size(a) > size(b);
    if (a->begin != b->begin) return a->begin < b->begin;
    return a->buffer < b->buffer;
  });

  // The bytes taken by the placed buffers, by live range. The gaps a buffer
  // may go into are the holes in the union of the byte ranges of the placed
  // buffers live at the same time: the same gaps as a walk over those
  // buffers by offset, found without visiting every placed buffer.
  size_t times = 0;
  for (const LiveInterval &l : slots) times = std::max(times, l.end + 1);
  ArenaOccupancy taken(times);
  uint64_t arenaBytes = 0;
  for (const LiveInterval *l : order) {
    plan::Buffer &b = program.buffers[l->buffer];
    uint64_t need = size(l);
    if (need == 0) {
      b.offset = 0;
      continue;
    }
    // Best fit: the smallest hole that can hold the buffer, the lowest on a
    // tie; else the top of the bytes taken.
    std::optional<uint64_t> best;
    uint64_t bestGap = 0, cursor = 0;
    for (const ByteSpan &t : taken.taken(l->begin, l->end)) {
      if (t.lo >= cursor + need) {
        uint64_t gap = t.lo - cursor;
        if (!best || gap < bestGap) {
          best = cursor;
          bestGap = gap;
        }
      }
      cursor = t.hi;
    }
    b.offset = best ? *best : cursor;
    arenaBytes = std::max(arenaBytes, b.offset + need);
    taken.add(l->begin, l->end, {b.offset, b.offset + need});
  }
  for (const LiveInterval &l : live)
    if (!takes.empty() && takes[l.buffer] != l.buffer)
      program.buffers[l.buffer].offset = program.buffers[takes[l.buffer]].offset;
  program.arenaBytes = arenaBytes;
  program.noReuseBytes = noReuse;
}

void planPersistent(plan::DeviceProgram &program) {
  uint64_t offset = 0;
  for (plan::Buffer &b : program.buffers) {
    if (b.region != plan::Region::Persistent) continue;
    b.offset = offset;
    offset += plan::alignUp(b.bytes);
  }
  program.persistentBytes = offset;
}

} // namespace mpc::codegen
