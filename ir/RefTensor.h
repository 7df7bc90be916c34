//===- ir/RefTensor.h - float64 tensors of the reference semantics -------===//
//
// The reference kernels in the op records and the interpreter compute in
// float64 on these plain row-major arrays. i32 values (labels) are stored as
// exact doubles.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Type.h"

#include <vector>

namespace mpc::ir {

struct RefTensor {
  Shape shape;
  std::vector<double> data;

  RefTensor() = default;
  explicit RefTensor(Shape s, double fill = 0.0);
  int64_t numElements() const { return int64_t(data.size()); }
};

/// Rounds every value to what an element of `dtype` holds: a bf16 or f16
/// value is stored in two bytes on every backend (ops/Float16.h), so the
/// reference holds it so too; f32 and i32 values are left as they are
/// (float64 stands for f32 throughout the reference).
void roundToType(RefTensor &t, DType dtype);

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const Shape &shape);

/// For broadcasting: the flat index into an operand of shape `in` that feeds
/// output position `outIndex` (multi-index over `out`).
int64_t broadcastIndex(const std::vector<int64_t> &outIndex, const Shape &in);

/// Advances a multi-index over `shape` in row-major order; false at the end.
bool nextIndex(std::vector<int64_t> &index, const Shape &shape);

} // namespace mpc::ir
