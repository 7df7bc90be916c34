//===- codegen/ArenaOccupancy.cpp - which arena bytes are taken, and when -===//
#include "codegen/ArenaOccupancy.h"

#include "support/Error.h"

#include <algorithm>

namespace mpc::codegen {

namespace {

/// Merges [s.lo, s.hi) into sorted, disjoint, non-touching `spans`.
void mergeInto(std::vector<ByteSpan> &spans, ByteSpan s) {
  // The first span that ends at or after s.lo touches or follows s.
  auto first = std::lower_bound(spans.begin(), spans.end(), s.lo,
                                [](const ByteSpan &x, uint64_t lo) { return x.hi < lo; });
  auto last = first;
  while (last != spans.end() && last->lo <= s.hi) {
    s.lo = std::min(s.lo, last->lo);
    s.hi = std::max(s.hi, last->hi);
    ++last;
  }
  if (first == last) {
    spans.insert(first, s);
    return;
  }
  *first = s;
  spans.erase(first + 1, last);
}

} // namespace

ArenaOccupancy::ArenaOccupancy(size_t times) {
  while (leaves_ < times) leaves_ *= 2;
  cover_.resize(2 * leaves_);
  sub_.resize(2 * leaves_);
}

void ArenaOccupancy::add(size_t begin, size_t end, ByteSpan bytes) {
  MPC_ASSERT(begin <= end && end < leaves_, "live range outside the arena index");
  if (bytes.lo < bytes.hi) add(1, 0, leaves_ - 1, begin, end, bytes);
}

void ArenaOccupancy::add(size_t node, size_t lo, size_t hi, size_t begin, size_t end,
                         ByteSpan bytes) {
  if (hi < begin || end < lo) return;
  mergeInto(sub_[node], bytes);
  if (begin <= lo && hi <= end) {
    mergeInto(cover_[node], bytes);
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  add(2 * node, lo, mid, begin, end, bytes);
  add(2 * node + 1, mid + 1, hi, begin, end, bytes);
}

std::vector<ByteSpan> ArenaOccupancy::taken(size_t begin, size_t end) const {
  MPC_ASSERT(begin <= end && end < leaves_, "live range outside the arena index");
  std::vector<ByteSpan> all;
  collect(1, 0, leaves_ - 1, begin, end, all);
  std::sort(all.begin(), all.end(),
            [](const ByteSpan &a, const ByteSpan &b) { return a.lo < b.lo; });
  std::vector<ByteSpan> out;
  for (const ByteSpan &s : all) {
    if (!out.empty() && s.lo <= out.back().hi) out.back().hi = std::max(out.back().hi, s.hi);
    else out.push_back(s);
  }
  return out;
}

void ArenaOccupancy::collect(size_t node, size_t lo, size_t hi, size_t begin, size_t end,
                             std::vector<ByteSpan> &out) const {
  if (hi < begin || end < lo) return;
  if (begin <= lo && hi <= end) {
    // Every rectangle stored in this subtree overlaps the query.
    out.insert(out.end(), sub_[node].begin(), sub_[node].end());
    return;
  }
  // Rectangles covering this whole node overlap the query too.
  out.insert(out.end(), cover_[node].begin(), cover_[node].end());
  size_t mid = lo + (hi - lo) / 2;
  collect(2 * node, lo, mid, begin, end, out);
  collect(2 * node + 1, mid + 1, hi, begin, end, out);
}

} // namespace mpc::codegen
