//===- runtime/cuda/kernels/Kernels.h - what the CUDA families share ----===//
//
// The device-side types and launchers that more than one kernel family uses
// (the strided and reduction descriptors, the bad-data record, gather, fill
// and the full reduction); each family's own launchers live in its .cu
// file. Every launcher is asynchronous on the given stream, allocates
// nothing and never synchronises the host; shapes and strides arrive
// precomputed in small by-value descriptors.
//
// This header is compiled by nvcc (C++17) and by the host compiler (C++20),
// so it uses only C++17 and the CUDA runtime types.
//
// Reductions are deterministic: each uses a fixed partition of the reduced
// elements that depends only on the shape (never on timing or atomics) and
// combines partial sums in a fixed binary tree, so a plan gives bit-identical
// results run after run on the same GPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mpc::runtime::cuda {

/// Largest rank a strided descriptor holds (after merging contiguous dims).
constexpr int kMaxRank = 8;

/// An output iteration space `dims` (row-major) and, for up to two operands,
/// the element stride of each output dim in that operand (0 for a broadcast
/// dim). Built by makeStrided* on the host.
struct StridedDesc {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strideA[kMaxRank] = {};
  int64_t strideB[kMaxRank] = {};
  int64_t count = 1; ///< product of dims
};

/// Bad data found on the device: an index (a cross-entropy label, an
/// embedding id) outside its range [0, bound). A kernel cannot throw, so it
/// records the finding here and carries on with a harmless result; the host
/// reads the record when it next waits for the device and throws a UserError
/// naming the device, the instruction, the step, the position and the value.
/// Device memory, zeroed at load and never reset: the first finding is the
/// one reported, and the run stops there.
struct DataError {
  /// 0, or (step << 32) | (1 + instruction) of the first instruction to find
  /// bad data: later instructions, and the same one in a later step, leave
  /// the record alone.
  unsigned long long where;
  /// ~((position << 32) | uint32_t(value)) for the smallest bad position that
  /// instruction found (an atomicMax of the complement, so the zeroed record
  /// means none; positions from 2^32 - 1 on share the last slot).
  unsigned long long what;
  /// The bound of the valid range of the first finding.
  long long bound;
  /// The step being run, the executor's number (launchBeginStep): dropout
  /// keys its masks by it, read here on the device.
  long long step;
};
/// What a launcher reports bad data to: the record and its instruction.
struct DataErrorSink {
  DataError *record = nullptr;
  int instr = 0;
};
/// Sets record->step = step, in stream order before the step's kernels.
void launchBeginStep(DataError *record, int64_t step, cudaStream_t stream);

/// y[i] = x[offsetA(i)] over `d`: transpose and broadcast_to. Works on 4-byte
/// elements of either dtype.
void launchGather(const uint32_t *x, uint32_t *y, const StridedDesc &d, cudaStream_t stream);
/// y[0..n) = value.
void launchFill(float *y, int64_t n, float value, cudaStream_t stream);

/// A reduction: every output element (iteration space `out`, its input
/// offsets in out.strideA) sums the input elements of the space `red` (input
/// offsets in red.strideA). `innerReduced` selects the memory-friendly
/// variant: true when the input's last dimension is among the reduced ones.
struct ReduceDesc {
  StridedDesc out;
  StridedDesc red;
  bool innerReduced = false;
};

/// Full reduction of n elements to y[0] = scale * sum_i f(a[i], b[i]), f
/// being a (b null) or (a - b)^2 (b given). Two fixed stages through
/// `scratch` (allReduceScratchFloats(n) floats).
void launchReduceAll(const float *a, const float *b, float *y, int64_t n, float scale,
                     float *scratch, cudaStream_t stream);
int64_t allReduceScratchFloats(int64_t n);

} // namespace mpc::runtime::cuda
