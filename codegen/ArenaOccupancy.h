//===- codegen/ArenaOccupancy.h - which arena bytes are taken, and when --===//
//
// The memory planner places buffers one at a time, each a rectangle in
// (time, bytes): its live range of instructions and its byte range in the
// arena. To place the next buffer it needs the byte ranges taken by the
// placed buffers whose live ranges overlap its own. Walking every placed
// buffer makes planning quadratic; this index answers the question in time
// that grows with the number of separate taken ranges, not of buffers.
//
// It is a segment tree over instruction indices. A rectangle is stored at
// the O(log T) nodes that exactly cover its live range (`cover`), and its
// byte range is also merged into the `sub` union of every node on the way
// down to them. A live range [b, e] overlaps a stored rectangle exactly when
// one of the query's covering nodes lies below a node of the rectangle (that
// node's `sub` holds it) or on the path above one (that node's `cover` holds
// it), because segment tree ranges are nested or disjoint. Byte ranges are
// kept as sorted, disjoint and non-touching spans: buffers laid out side by
// side collapse into one span, which is what keeps the unions short.
//
// Internal to codegen/ (used by MemoryPlan.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpc::codegen {

/// A byte range [lo, hi) of the arena.
struct ByteSpan {
  uint64_t lo = 0, hi = 0;
};

class ArenaOccupancy {
public:
  /// Live ranges are instruction indices below `times`.
  explicit ArenaOccupancy(size_t times);

  /// Marks bytes [lo, hi) taken during instructions [begin, end] (inclusive).
  void add(size_t begin, size_t end, ByteSpan bytes);

  /// The bytes taken at some instruction of [begin, end], as sorted,
  /// disjoint, non-touching spans.
  std::vector<ByteSpan> taken(size_t begin, size_t end) const;

private:
  void add(size_t node, size_t lo, size_t hi, size_t begin, size_t end, ByteSpan bytes);
  void collect(size_t node, size_t lo, size_t hi, size_t begin, size_t end,
               std::vector<ByteSpan> &out) const;

  size_t leaves_ = 1; ///< a power of two, at least `times`
  std::vector<std::vector<ByteSpan>> cover_, sub_;
};

} // namespace mpc::codegen
