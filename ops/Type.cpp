//===- ops/Type.cpp - tensor types --------------------------------------===//
#include "ops/Type.h"

#include <iterator>

namespace mpc::ops {

std::string dtypeNameList(bool quote) {
  std::vector<std::string> names;
  for (DType t : kDTypes) names.push_back(quote ? "\"" + std::string(dtypeName(t)) + "\"" : dtypeName(t));
  return choiceText(names);
}

std::string precisionList() {
  return choiceText({std::begin(kPrecisions), std::end(kPrecisions)});
}

std::string rankLimitText(size_t rank) {
  return "rank " + std::to_string(rank) + " exceeds the limit of " + std::to_string(kMaxRank) +
         " axes";
}

std::optional<int64_t> checkedNumElements(const Shape &shape) {
  if (shape.size() > kMaxRank) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > kMaxElements / d) return std::nullopt;
    n *= d;
  }
  if (n > kMaxElements) return std::nullopt;
  return n;
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorType::str() const { return dtypeName(dtype) + shapeText(shape); }

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

} // namespace mpc::ops
