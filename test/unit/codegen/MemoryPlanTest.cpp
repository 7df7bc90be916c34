//===- test/unit/codegen/MemoryPlanTest.cpp - the arena layout ------------===//
//
// planArena finds the gaps through an interval index (codegen/
// ArenaOccupancy.h) instead of walking every placed buffer. The layout must
// not change with it: plans stay byte-identical. These tests keep the
// direct walk as the reference and compare every offset and the arena size
// on random programs (sizes with many ties and zero-byte buffers, short and
// long live ranges, nested and disjoint), and check the index on its own.
//
//===----------------------------------------------------------------------===//
#include "codegen/ArenaOccupancy.h"
#include "codegen/LowerSteps.h"
#include "plan/PlanFormat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

namespace mpc::codegen {
namespace {

/// The arena planner as it was before the index: for each buffer, largest
/// first, walk all placed buffers by (offset, id), skip those not live at
/// the same time, and take the smallest gap that fits (the lowest on a tie),
/// else the top.
void referencePlanArena(plan::DeviceProgram &program, const std::vector<LiveInterval> &live) {
  using plan::alignUp;
  std::vector<const LiveInterval *> order;
  for (const LiveInterval &l : live) order.push_back(&l);
  auto size = [&](const LiveInterval *l) { return alignUp(program.buffers[l->buffer].bytes); };
  std::stable_sort(order.begin(), order.end(), [&](const LiveInterval *a, const LiveInterval *b) {
    if (size(a) != size(b)) return size(a) > size(b);
    if (a->begin != b->begin) return a->begin < b->begin;
    return a->buffer < b->buffer;
  });
  std::vector<const LiveInterval *> placed;
  auto byOffset = [&](const LiveInterval *x, const LiveInterval *y) {
    const plan::Buffer &a = program.buffers[x->buffer], &b = program.buffers[y->buffer];
    return a.offset != b.offset ? a.offset < b.offset : a.id < b.id;
  };
  uint64_t arenaBytes = 0;
  for (const LiveInterval *l : order) {
    plan::Buffer &b = program.buffers[l->buffer];
    uint64_t need = size(l);
    if (need == 0) {
      b.offset = 0;
      continue;
    }
    std::optional<uint64_t> best;
    uint64_t bestGap = 0, cursor = 0;
    for (const LiveInterval *p : placed) {
      if (!overlapInTime(*p, *l)) continue;
      const plan::Buffer &c = program.buffers[p->buffer];
      if (c.offset >= cursor + need) {
        uint64_t gap = c.offset - cursor;
        if (!best || gap < bestGap) {
          best = cursor;
          bestGap = gap;
        }
      }
      cursor = std::max(cursor, c.offset + alignUp(c.bytes));
    }
    b.offset = best ? *best : cursor;
    arenaBytes = std::max(arenaBytes, b.offset + need);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), l, byOffset), l);
  }
  program.arenaBytes = arenaBytes;
}

struct RandomProgram {
  plan::DeviceProgram program;
  std::vector<LiveInterval> live;
};

/// `n` arena buffers over `times` instructions. Sizes come from a few
/// classes (so that ties in size are common, as in real models), some of
/// them zero; a quarter of the live ranges are long.
RandomProgram randomProgram(std::mt19937 &rng, size_t n, size_t times) {
  RandomProgram r;
  const uint64_t sizes[] = {0, 1, 64, 100, 128, 256, 512, 1000, 4096, 4097};
  std::uniform_int_distribution<size_t> pickSize(0, std::size(sizes) - 1);
  std::uniform_int_distribution<size_t> at(0, times - 1), shortLen(0, 4);
  for (uint32_t id = 0; id < n; ++id) {
    plan::Buffer b;
    b.id = id;
    b.bytes = sizes[pickSize(rng)];
    r.program.buffers.push_back(b);
    size_t begin = at(rng);
    size_t end = rng() % 4 == 0 ? std::min(times - 1, begin + at(rng) / 2)
                                : std::min(times - 1, begin + shortLen(rng));
    r.live.push_back({id, begin, end});
  }
  return r;
}

TEST(MemoryPlan, SameLayoutAsTheDirectWalkOnRandomPrograms) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 400; ++round) {
    size_t n = 1 + rng() % 120, times = 1 + rng() % 80;
    RandomProgram fast = randomProgram(rng, n, times);
    RandomProgram ref = fast;
    planArena(fast.program, fast.live);
    referencePlanArena(ref.program, ref.live);
    ASSERT_EQ(fast.program.arenaBytes, ref.program.arenaBytes) << "round " << round;
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(fast.program.buffers[i].offset, ref.program.buffers[i].offset)
          << "round " << round << ", buffer " << i;
  }
}

TEST(MemoryPlan, SameLayoutOnALargeProgram) {
  std::mt19937 rng(99);
  RandomProgram fast = randomProgram(rng, 3000, 2000);
  RandomProgram ref = fast;
  planArena(fast.program, fast.live);
  referencePlanArena(ref.program, ref.live);
  EXPECT_EQ(fast.program.arenaBytes, ref.program.arenaBytes);
  for (size_t i = 0; i < fast.program.buffers.size(); ++i)
    ASSERT_EQ(fast.program.buffers[i].offset, ref.program.buffers[i].offset) << "buffer " << i;
}

/// The index against a brute-force union of the stored rectangles.
TEST(ArenaOccupancy, TakenIsTheUnionOfOverlappingRectangles) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    size_t times = 1 + rng() % 50;
    ArenaOccupancy index(times);
    struct Rect {
      size_t begin, end;
      ByteSpan bytes;
    };
    std::vector<Rect> rects;
    for (int k = 0; k < 40; ++k) {
      size_t a = rng() % times, b = rng() % times;
      uint64_t lo = rng() % 64, len = rng() % 8;
      Rect r{std::min(a, b), std::max(a, b), {lo, lo + len}};
      rects.push_back(r);
      index.add(r.begin, r.end, r.bytes);

      size_t qa = rng() % times, qb = rng() % times;
      size_t qBegin = std::min(qa, qb), qEnd = std::max(qa, qb);
      std::vector<bool> byte(80, false);
      for (const Rect &s : rects)
        if (s.begin <= qEnd && qBegin <= s.end)
          for (uint64_t x = s.bytes.lo; x < s.bytes.hi; ++x) byte[x] = true;
      std::vector<bool> got(80, false);
      uint64_t prevHi = 0;
      bool first = true;
      for (const ByteSpan &t : index.taken(qBegin, qEnd)) {
        ASSERT_LT(t.lo, t.hi);
        if (!first) {
          ASSERT_GT(t.lo, prevHi) << "spans must be sorted and not touch";
        }
        first = false;
        prevHi = t.hi;
        for (uint64_t x = t.lo; x < t.hi; ++x) got[x] = true;
      }
      ASSERT_EQ(got, byte) << "round " << round << ", rectangle " << k;
    }
  }
}

} // namespace
} // namespace mpc::codegen
