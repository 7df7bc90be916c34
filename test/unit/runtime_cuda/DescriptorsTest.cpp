//===- test/unit/runtime_cuda/DescriptorsTest.cpp - shape descriptors ---===//
//
// The strides the CUDA kernels index with are built on the host; these
// tests check them against naive multi-index arithmetic on random shapes
// (with size-1 and broadcast dims), and that contiguous dims merge. They
// need no GPU: the device code walks a descriptor exactly like `offsetOf`.
//
//===----------------------------------------------------------------------===//
#include "runtime/Strides.h"
#include "runtime/cuda/kernels/Descriptors.h"

#include <gtest/gtest.h>

#include <random>

namespace mpc::runtime::cuda {
namespace {

/// The device's index walk (kernels/Common.cuh), on the host.
void offsetsOf(const StridedDesc &d, int64_t i, int64_t &a, int64_t &b) {
  a = b = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t c = i % d.dims[k];
    i /= d.dims[k];
    a += c * d.strideA[k];
    b += c * d.strideB[k];
  }
}

/// Naive: the flat index into `in` (broadcast, right-aligned) of output
/// multi-index `idx`.
int64_t naiveBroadcast(const Dims &out, const Dims &in, const Dims &idx) {
  int64_t off = 0, stride = 1;
  for (size_t k = in.size(); k-- > 0;) {
    size_t o = out.size() - in.size() + k;
    off += (in[k] == 1 ? 0 : idx[o]) * stride;
    stride *= in[k];
  }
  return off;
}

bool next(Dims &idx, const Dims &shape) {
  for (size_t k = shape.size(); k-- > 0;) {
    if (++idx[k] < shape[k]) return true;
    idx[k] = 0;
  }
  return false;
}

TEST(CudaDescriptors, BroadcastMatchesNaiveIndexingOnRandomShapes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    size_t rank = 1 + rng() % 5;
    Dims out(rank), a, b;
    for (auto &d : out) d = 1 + rng() % 4;
    size_t ra = rng() % (rank + 1), rb = rng() % (rank + 1);
    for (size_t k = rank - ra; k < rank; ++k) a.push_back(rng() % 3 == 0 ? 1 : out[k]);
    for (size_t k = rank - rb; k < rank; ++k) b.push_back(rng() % 3 == 0 ? 1 : out[k]);
    StridedDesc d = broadcastDesc(out, a, b);
    Dims idx(rank, 0);
    int64_t i = 0;
    do {
      int64_t oa, ob;
      offsetsOf(d, i, oa, ob);
      ASSERT_EQ(oa, naiveBroadcast(out, a, idx)) << "trial " << trial << " element " << i;
      ASSERT_EQ(ob, naiveBroadcast(out, b, idx)) << "trial " << trial << " element " << i;
      ++i;
    } while (next(idx, out));
    EXPECT_EQ(d.count, i);
  }
}

TEST(CudaDescriptors, ContiguousDimsMerge) {
  StridedDesc d = broadcastDesc({4, 5, 6}, {4, 5, 6}, {6});
  ASSERT_EQ(d.rank, 2);
  EXPECT_EQ(d.dims[0], 20);
  EXPECT_EQ(d.strideA[0], 6);
  EXPECT_EQ(d.strideB[0], 0);
  EXPECT_EQ(d.strideB[1], 1);
  StridedDesc same = broadcastDesc({3, 1, 7}, {3, 1, 7}, {3, 1, 7});
  ASSERT_EQ(same.rank, 1);
  EXPECT_EQ(same.dims[0], 21);
}

TEST(CudaDescriptors, TransposeMatchesNaivePermutation) {
  Dims in = {2, 3, 4, 5};
  std::vector<int64_t> perm = {2, 0, 3, 1};
  StridedDesc d = transposeDesc(in, perm);
  Dims out = {4, 2, 5, 3}, strides = runtime::contiguousStrides(in), idx(4, 0);
  int64_t i = 0;
  do {
    int64_t want = 0;
    for (size_t k = 0; k < 4; ++k) want += idx[k] * strides[size_t(perm[k])];
    int64_t got, unused;
    offsetsOf(d, i++, got, unused);
    ASSERT_EQ(got, want);
  } while (next(idx, out));
}

TEST(CudaDescriptors, ReduceSplitsKeptAndReducedAxes) {
  ReduceDesc r = reduceDesc({2, 3, 4}, {false, true, false});
  ASSERT_EQ(r.out.rank, 2);
  EXPECT_EQ(r.out.count, 8);
  EXPECT_EQ(r.red.count, 3);
  EXPECT_EQ(r.red.strideA[0], 4);
  EXPECT_FALSE(r.innerReduced);
  ReduceDesc inner = reduceDesc({2, 3, 4}, {false, true, true});
  ASSERT_EQ(inner.red.rank, 1); // merged 3 x 4
  EXPECT_EQ(inner.red.count, 12);
  EXPECT_TRUE(inner.innerReduced);
  ReduceDesc all = reduceDesc({5, 1, 7}, {true, true, true});
  EXPECT_EQ(all.out.count, 1);
  EXPECT_EQ(all.red.count, 35);
  ReduceDesc empty = reduceDesc({0, 3}, {false, true});
  EXPECT_EQ(empty.out.count, 0);
}

TEST(CudaDescriptors, ReduceOffsetsCoverEveryInputElementOnce) {
  Dims in = {3, 4, 2, 5};
  std::vector<bool> reduced = {true, false, true, false};
  ReduceDesc r = reduceDesc(in, reduced);
  std::vector<int> seen(120, 0);
  for (int64_t o = 0; o < r.out.count; ++o)
    for (int64_t k = 0; k < r.red.count; ++k) {
      int64_t oa, ob, ra, rb;
      offsetsOf(r.out, o, oa, ob);
      offsetsOf(r.red, k, ra, rb);
      ++seen[size_t(oa + ra)];
    }
  for (int s : seen) EXPECT_EQ(s, 1);
}

} // namespace
} // namespace mpc::runtime::cuda
