//===- ops/Shard.h - a tensor's elements split into parts -----------------===//
//
// How the elements of a tensor split over the R members of a group: the
// ranges collectives reduce or hold (ops/Collective.h), and ZeRO-1's layout
// of sharded optimizer state, which the IR, the plan and the runtime share.
// Plain C++17: plan/Plan.h, which CUDA translation units include, uses it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpc::ops {

/// Elements [begin, end) of a flat tensor.
struct ElementRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

/// Elements [begin, end) of part `i` of `n` elements split into `parts`
/// consecutive ranges as evenly as integers allow. For reduce_scatter and
/// all_gather, whose axis 0 divides evenly, part i is exactly the rows of
/// member i.
constexpr ElementRange partOf(int64_t n, size_t parts, size_t i) {
  return {n * int64_t(i) / int64_t(parts), n * int64_t(i + 1) / int64_t(parts)};
}

/// ZeRO-1's layout of a tensor of `n` elements sharded over `parts` members
/// (docs/parallelism.md): flattened, zero-padded at the end to parts·S
/// elements, S = ceil(n / parts), member i holding [i·S, (i+1)·S). Every
/// part has one size, as reduce_scatter and all_gather need; shardRange
/// gives the tensor's own elements in part i (empty past the end).
constexpr int64_t shardElements(int64_t n, int64_t parts) { return (n + parts - 1) / parts; }
constexpr ElementRange shardRange(int64_t n, int64_t parts, int64_t i) {
  int64_t s = shardElements(n, parts);
  int64_t begin = i * s < n ? i * s : n;
  int64_t end = (i + 1) * s < n ? (i + 1) * s : n;
  return {begin, end};
}

/// A tensor split along an axis into equal parts (tensor parallelism):
/// seen row-major, it is `outer` blocks of `parts` x `inner` elements, and
/// part i holds elements [i·inner, (i+1)·inner) of each block, in order.
struct AxisBlocks {
  int64_t outer = 1, inner = 1;
};
constexpr AxisBlocks axisBlocks(const int64_t *shape, size_t rank, int axis, int64_t parts) {
  AxisBlocks b;
  for (size_t i = 0; i < rank; ++i) {
    if (int(i) < axis) b.outer *= shape[i];
    else if (int(i) > axis) b.inner *= shape[i];
  }
  b.inner *= shape[axis] / parts;
  return b;
}

/// Part `i` of `parts` of a tensor of shape `shape` (`rank` axes), as runs
/// of consecutive elements in both the whole and the part: f(wholeOffset,
/// partOffset, count) for each run, in order. `axis` -1 is ZeRO-1's flat
/// layout (one run; the part's zero padding is not visited), else the equal
/// parts along `axis` (a run per block, AxisBlocks). The one walk the plan's
/// runtimes (plan::extractPart, joinPart) and the reference interpreter
/// share.
template <class F>
void forEachPartRun(const int64_t *shape, size_t rank, int axis, int64_t parts, int64_t i, F &&f) {
  if (axis < 0) {
    int64_t n = 1;
    for (size_t d = 0; d < rank; ++d) n *= shape[d];
    ElementRange r = shardRange(n, parts, i);
    if (r.size() > 0) f(r.begin, int64_t(0), r.size());
    return;
  }
  const AxisBlocks b = axisBlocks(shape, rank, axis, parts);
  for (int64_t o = 0; o < b.outer; ++o) f((o * parts + i) * b.inner, o * b.inner, b.inner);
}

} // namespace mpc::ops
