//===- ops/Type.h - tensor types: dtype and static shape -----------------===//
//
// Every value is a dense tensor with a static shape. A shape of
// rank 0 is a scalar. Ranks and element counts are checked wherever a shape
// is built from user input (see checkedNumElements).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/DType.h"
#include "support/StringUtil.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpc::ops {

using Shape = std::vector<int64_t>;

/// Largest element count mpc accepts for one tensor (2^40): far beyond any
/// real model, small enough that byte sizes cannot overflow int64.
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// Largest rank mpc accepts for one tensor: far beyond any real model, and
/// bounded so every layer may keep a shape's axes in fixed storage. Every
/// reader refuses a larger rank where a shape enters (the model reader for
/// shapes and the results they give, NPY, safetensors, plan.bin), so no
/// later layer meets one.
constexpr size_t kMaxRank = 16;

/// "rank 17 exceeds the limit of 16 axes": how every reader says a shape
/// of `rank` axes is over kMaxRank.
std::string rankLimitText(size_t rank);

/// Product of dims; nullopt when the rank exceeds kMaxRank, a dim is
/// negative or the product exceeds kMaxElements.
std::optional<int64_t> checkedNumElements(const Shape &shape);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t rank() const { return int64_t(shape.size()); }
  /// Number of elements; the shape must already be checked.
  int64_t numElements() const;
  int64_t byteSize() const { return numElements() * dtypeSize(dtype); }
  /// "f32[100,2]", "f32[]" for a scalar.
  std::string str() const;
  // Spelled out: CUDA translation units include this header as C++17.
  bool operator==(const TensorType &o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// "[2,3]" (support/StringUtil.h).
using mpc::shapeText;

/// NumPy broadcasting of two shapes; nullopt when incompatible.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Normalises an axis in [-rank, rank) to [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace mpc::ops
