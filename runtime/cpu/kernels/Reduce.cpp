//===- runtime/cpu/kernels/Reduce.cpp - sum, mean, broadcast_to ---------===//
//
// Reductions accumulate in double, walking the input in row-major order (the
// reference kernel's order) into a per-instance scratch buffer, then round
// once. broadcast_to is a strided copy with stride 0 on broadcast axes.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/Loops.h"

#include <cmath>

namespace mpc::runtime::cpu {

namespace {

// strides[0]: for each input axis, the stride into the output (0 if reduced).
// scalar: 1 / count for mean, 1 for sum.
void prepareReduce(KernelInstance &k, bool mean) {
  const TensorArg &x = k.in[0];
  std::vector<int64_t> axes = attrInts(k.attrMap(), "axes");
  int64_t rank = x.rank();
  std::vector<bool> reduced(size_t(rank), axes.empty());
  // The axes are in range and unrepeated: proven by the plan verifier.
  for (int64_t a : axes) reduced[size_t(a < 0 ? a + rank : a)] = true;
  std::vector<int64_t> kshape = x.shape;
  int64_t count = 1;
  for (size_t i = 0; i < kshape.size(); ++i)
    if (reduced[i]) count *= kshape[i], kshape[i] = 1;
  int64_t outNumel = 1;
  for (int64_t d : kshape) outNumel *= d;
  std::vector<int64_t> s = contiguousStrides(kshape);
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) s[i] = 0;
  k.strides = {s};
  // The column fast path of runReduce: reduced axes all lead, kept ones
  // trail, and something is kept.
  int64_t lead = 0;
  while (lead < rank && reduced[size_t(lead)]) ++lead;
  bool columns = lead > 0 && lead < rank;
  for (int64_t i = lead; i < rank; ++i) columns = columns && !reduced[size_t(i)];
  k.ints = {columns ? outNumel : 0};
  k.scalar = mean ? (count > 0 ? 1.0 / double(count) : 0.0) : 1.0;
  // Mean over zero elements is NaN in the reference (0/0); sum is 0.
  if (mean && count == 0) k.scalar = std::nan("");
}

void runReduce(const KernelInstance &k) {
  std::vector<double> &acc = k.scratch;
  acc.assign(size_t(k.out.numel), 0.0);
  const float *x = k.in[0].f();
  if (k.ints.size() == 1 && k.ints[0] > 0) {
    // Columns: the leading axes are reduced, the trailing ones kept (a bias
    // gradient); rows are added in order, as the general path does.
    const int64_t d = k.ints[0], n = k.in[0].numel;
    for (int64_t r = 0; r < n; r += d)
      for (int64_t j = 0; j < d; ++j) acc[size_t(j)] += x[r + j];
  } else {
  int64_t flat = 0;
  forEachRow<1>(k.in[0].shape, {&k.strides[0]},
                [&](int64_t, const std::array<int64_t, 1> &off, int64_t len,
                    const std::array<int64_t, 1> &st) {
                  const float *px = x + flat;
                  double *pa = acc.data() + off[0];
                  if (st[0] == 0) {
                    double s = pa[0];
                    for (int64_t j = 0; j < len; ++j) s += px[j];
                    pa[0] = s;
                  } else {
                    for (int64_t j = 0; j < len; ++j) pa[j * st[0]] += px[j];
                  }
                  flat += len;
                });
  }
  float *o = k.out.f();
  for (int64_t i = 0; i < k.out.numel; ++i)
    o[i] = float(k.scalar == 1.0 ? acc[size_t(i)] : acc[size_t(i)] * k.scalar);
}

void prepareBroadcastTo(KernelInstance &k) {
  k.strides = {broadcastStrides(k.in[0].shape, k.out.shape)};
}

void runStridedCopy(const KernelInstance &k) {
  const float *x = k.in[0].f();
  float *o = k.out.f();
  forEachRow<1>(k.out.shape, {&k.strides[0]},
                [&](int64_t out, const std::array<int64_t, 1> &off, int64_t len,
                    const std::array<int64_t, 1> &st) {
                  const float *px = x + off[0];
                  float *po = o + out;
                  if (st[0] == 1)
                    for (int64_t j = 0; j < len; ++j) po[j] = px[j];
                  else
                    for (int64_t j = 0; j < len; ++j) po[j] = px[j * st[0]];
                });
}

} // namespace

/// Shared with Shape.cpp (transpose is a strided copy too).
void runStridedCopyKernel(const KernelInstance &k) { runStridedCopy(k); }

namespace kernels::Reduce {
const CpuKernel Sum{[](KernelInstance &k) { prepareReduce(k, false); }, runReduce};
const CpuKernel Mean{[](KernelInstance &k) { prepareReduce(k, true); }, runReduce};
const CpuKernel BroadcastTo{prepareBroadcastTo, runStridedCopy};
} // namespace kernels::Reduce

} // namespace mpc::runtime::cpu
