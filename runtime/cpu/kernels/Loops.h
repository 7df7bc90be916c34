//===- runtime/cpu/kernels/Loops.h - strided loops shared by kernels ----===//
//
// The one multi-dimensional loop of the CPU kernels: walk an output shape in
// row-major order, with each operand addressed through its own strides (0 on
// broadcast axes, permuted for a transpose). The innermost axis is a plain
// loop with constant strides the compiler can vectorise; the outer axes
// advance a small odometer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace mpc::runtime::cpu {

struct KernelInstance;
/// out[i] = in0[strided i] over the output shape with strides[0] (Reduce.cpp);
/// broadcast_to and transpose.
void runStridedCopyKernel(const KernelInstance &k);
/// memmove of the operand's bytes into the result unless they alias
/// (Shape.cpp); reshape, copy, stop_gradient.
void runByteCopyKernel(const KernelInstance &k);

/// For every row (all axes but the last) of `shape`, calls
/// `row(outOffset, offsets, length, innerStrides)`, where offsets[i] is the
/// element offset of operand i at the row start under strides[i].
template <size_t N, class Row>
void forEachRow(const std::vector<int64_t> &shape,
                const std::array<const std::vector<int64_t> *, N> &strides, Row row) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total == 0) return;
  size_t rank = shape.size();
  int64_t len = rank ? shape[rank - 1] : 1;
  std::array<int64_t, N> inner{};
  for (size_t i = 0; i < N; ++i) inner[i] = rank ? (*strides[i])[rank - 1] : 0;
  std::vector<int64_t> idx(rank ? rank - 1 : 0, 0);
  std::array<int64_t, N> off{};
  int64_t outOff = 0;
  for (;;) {
    row(outOff, off, len, inner);
    outOff += len;
    // Advance the odometer over axes rank-2 .. 0.
    size_t d = idx.size();
    for (;;) {
      if (d == 0) return;
      --d;
      ++idx[d];
      for (size_t i = 0; i < N; ++i) off[i] += (*strides[i])[d];
      if (idx[d] < shape[d]) break;
      for (size_t i = 0; i < N; ++i) off[i] -= (*strides[i])[d] * shape[d];
      idx[d] = 0;
    }
  }
}

} // namespace mpc::runtime::cpu
