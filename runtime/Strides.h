//===- runtime/Strides.h - row-major and broadcast strides --------------===//
//
// The index arithmetic both backends build their loops and descriptors
// from: the element strides of a row-major buffer, and the strides of an
// operand seen through NumPy broadcasting over a result (0 on broadcast
// axes), and the multi-index of a flat position.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace mpc::runtime {

/// Row-major element strides of `shape`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// Strides of `in` viewed with NumPy broadcasting (right-aligned) over
/// `out`: one per axis of `out`, 0 where `in` is broadcast. Throws RuleError
/// when `in` does not broadcast to `out`.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out);

/// The multi-index of row-major element `flat` of `shape` (for messages
/// that name a position: a bad embedding id).
std::vector<int64_t> unravelIndex(int64_t flat, const std::vector<int64_t> &shape);

} // namespace mpc::runtime
