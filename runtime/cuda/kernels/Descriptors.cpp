//===- runtime/cuda/kernels/Descriptors.cpp - shape descriptors for the kernels -===//
#include "runtime/cuda/kernels/Descriptors.h"

#include "runtime/Strides.h"
#include "support/Error.h"

#include <string>

namespace mpc::runtime::cuda {

namespace {

struct Axis {
  int64_t dim, sa, sb;
};

/// Drops size-1 axes and merges neighbours that are contiguous in both
/// operands, then packs the result.
StridedDesc pack(std::vector<Axis> axes) {
  std::vector<Axis> merged;
  for (const Axis &x : axes) {
    if (x.dim == 1) continue;
    if (!merged.empty()) {
      Axis &prev = merged.back();
      if (prev.sa == x.sa * x.dim && prev.sb == x.sb * x.dim) {
        prev.dim *= x.dim;
        prev.sa = x.sa;
        prev.sb = x.sb;
        continue;
      }
    }
    merged.push_back(x);
  }
  if (merged.size() > size_t(kMaxRank))
    throw RuleError("the cuda backend supports at most " + std::to_string(kMaxRank) +
                    " non-mergeable dimensions, got " + std::to_string(merged.size()));
  StridedDesc d;
  d.rank = int(merged.size());
  d.count = 1;
  for (size_t i = 0; i < merged.size(); ++i) {
    d.dims[i] = merged[i].dim;
    d.strideA[i] = merged[i].sa;
    d.strideB[i] = merged[i].sb;
    d.count *= merged[i].dim;
  }
  // A zero-sized dim was dropped only if it was 1; recompute count for 0s.
  for (const Axis &x : axes)
    if (x.dim == 0) d.count = 0;
  return d;
}

} // namespace

StridedDesc broadcastDesc(const Dims &out, const Dims &a, const Dims &b) {
  Dims sa = broadcastStrides(a, out), sb = broadcastStrides(b, out);
  std::vector<Axis> axes;
  for (size_t i = 0; i < out.size(); ++i) axes.push_back({out[i], sa[i], sb[i]});
  return pack(axes);
}

StridedDesc broadcastDesc(const Dims &out, const Dims &in) {
  Dims sa = broadcastStrides(in, out);
  std::vector<Axis> axes;
  for (size_t i = 0; i < out.size(); ++i) axes.push_back({out[i], sa[i], 0});
  return pack(axes);
}

StridedDesc transposeDesc(const Dims &in, const std::vector<int64_t> &perm) {
  Dims s = contiguousStrides(in);
  std::vector<Axis> axes;
  for (int64_t p : perm) axes.push_back({in[size_t(p)], s[size_t(p)], 0});
  return pack(axes);
}

ReduceDesc reduceDesc(const Dims &in, const std::vector<bool> &reduced) {
  Dims s = contiguousStrides(in);
  std::vector<Axis> kept, red;
  bool zero = false;
  // Merge runs of neighbouring axes of the same kind (contiguous in `in`).
  std::vector<std::pair<bool, Axis>> runs;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == 0) zero = true;
    if (in[i] == 1) continue;
    Axis x{in[i], s[i], 0};
    if (!runs.empty() && runs.back().first == reduced[i]) {
      Axis &prev = runs.back().second;
      prev.dim *= x.dim;
      prev.sa = x.sa;
      continue;
    }
    runs.push_back({reduced[i], x});
  }
  for (const auto &[isReduced, x] : runs) (isReduced ? red : kept).push_back(x);
  ReduceDesc d;
  d.out = pack(kept);
  d.red = pack(red);
  d.innerReduced = !runs.empty() && runs.back().first;
  if (zero) {
    // Some axis is empty: either the outputs or the reduced set is empty.
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] == 0) (reduced[i] ? d.red.count : d.out.count) = 0;
  }
  return d;
}

} // namespace mpc::runtime::cuda
