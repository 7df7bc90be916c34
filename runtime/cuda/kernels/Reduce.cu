//===- runtime/cuda/kernels/Reduce.cu - sums, means, broadcast_to ---------===//
//
// Deterministic reductions. The partition of the reduced elements among
// threads and blocks depends only on the shape, and partial sums combine in
// a fixed tree (no atomics), so results are bit-identical run after run:
//   * row variant (the input's last dim is reduced): one block per output,
//     each thread a strided partial sum, then a shared-memory tree;
//   * split variant (few outputs, very many elements each): a fixed 64-way
//     split per output into scratch, then a second tree pass;
//   * column variant (the last dim is kept): a 32 x 16 block, 32 outputs
//     side by side (coalesced reads), 16 partial sums each, then a tree;
//   * full reduction (a sum to one element, mse_loss): a fixed grid of
//     partial sums into scratch, then one block's tree.
// broadcast_to is a strided gather (launchGather, Elementwise.cu).
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/kernels/Descriptors.h"

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

// ---- device kernels and their launchers --------------------------------------

constexpr int kSplit = 64;           // blocks per output on the split path
constexpr int kColX = 32, kColY = 16; // column variant block shape
constexpr int kAllThreads = 256, kAllMaxBlocks = 1024, kAllPerThread = 8;

bool useSplit(const ReduceDesc &d) {
  return d.innerReduced && d.out.count < 64 && d.red.count >= 32768;
}

unsigned rowThreads(int64_t r) {
  unsigned t = 32;
  while (t < 256 && int64_t(t) < r) t <<= 1;
  return t;
}

__global__ void reduceRowKernel(const float *__restrict__ x, float *__restrict__ y,
                                ReduceDesc d, float scale) {
  __shared__ float shared[256];
  for (int64_t o = blockIdx.x; o < d.out.count; o += gridDim.x) {
    const float *base = x + stridedOffsetA(d.out, o);
    float acc = 0.f;
    for (int64_t r = threadIdx.x; r < d.red.count; r += blockDim.x)
      acc += base[stridedOffsetA(d.red, r)];
    float total = blockSum(acc, shared);
    if (threadIdx.x == 0) y[o] = scale * total;
    __syncthreads();
  }
}

__global__ void reduceSplitKernel(const float *__restrict__ x, float *__restrict__ partial,
                                  ReduceDesc d) {
  __shared__ float shared[256];
  int64_t o = blockIdx.y;
  int64_t chunk = (d.red.count + kSplit - 1) / kSplit;
  int64_t begin = blockIdx.x * chunk;
  int64_t end = begin + chunk < d.red.count ? begin + chunk : d.red.count;
  const float *base = x + stridedOffsetA(d.out, o);
  float acc = 0.f;
  for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
    acc += base[stridedOffsetA(d.red, r)];
  float total = blockSum(acc, shared);
  if (threadIdx.x == 0) partial[o * kSplit + blockIdx.x] = total;
}

__global__ void reduceSplitFinishKernel(const float *__restrict__ partial, float *__restrict__ y,
                                        float scale) {
  __shared__ float shared[kSplit];
  float total = blockSum(partial[blockIdx.x * kSplit + threadIdx.x], shared);
  if (threadIdx.x == 0) y[blockIdx.x] = scale * total;
}

__global__ void reduceColumnKernel(const float *__restrict__ x, float *__restrict__ y,
                                   ReduceDesc d, float scale) {
  __shared__ float shared[kColY][kColX + 1];
  int64_t o = blockIdx.x * int64_t(kColX) + threadIdx.x;
  float acc = 0.f;
  if (o < d.out.count) {
    const float *base = x + stridedOffsetA(d.out, o);
    for (int64_t r = threadIdx.y; r < d.red.count; r += kColY)
      acc += base[stridedOffsetA(d.red, r)];
  }
  shared[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  for (int s = kColY / 2; s > 0; s >>= 1) {
    if (int(threadIdx.y) < s) shared[threadIdx.y][threadIdx.x] += shared[threadIdx.y + s][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && o < d.out.count) y[o] = scale * shared[0][threadIdx.x];
}

unsigned allBlocks(int64_t n) {
  int64_t per = int64_t(kAllThreads) * kAllPerThread;
  int64_t b = (n + per - 1) / per;
  if (b < 1) b = 1;
  if (b > kAllMaxBlocks) b = kAllMaxBlocks;
  return unsigned(b);
}

__global__ void reduceAllPartialKernel(const float *__restrict__ a, const float *__restrict__ b,
                                       float *__restrict__ partial, int64_t n) {
  __shared__ float shared[kAllThreads];
  float acc = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (b) {
      float diff = a[i] - b[i];
      acc += diff * diff;
    } else {
      acc += a[i];
    }
  }
  float total = blockSum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void reduceAllFinishKernel(const float *__restrict__ partial, int64_t count,
                                      float *__restrict__ y, float scale) {
  __shared__ float shared[1024];
  float acc = 0.f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  float total = blockSum(acc, shared);
  if (threadIdx.x == 0) y[0] = scale * total;
}

int64_t reduceScratchFloats(const ReduceDesc &d) {
  return useSplit(d) ? d.out.count * kSplit : 0;
}

/// y[o] = scale * sum_r x[o, r]. `scratch` must hold reduceScratchFloats(d)
/// floats (used by the split path of large reductions to few outputs).
void launchReduceSum(const float *x, float *y, const ReduceDesc &d, float scale, float *scratch,
                     cudaStream_t stream) {
  if (d.out.count == 0) return;
  if (d.red.count == 0) { // an empty sum is 0 (mean of nothing: scale is NaN)
    launchFill(y, d.out.count, 0.f * scale, stream);
    return;
  }
  if (useSplit(d)) {
    reduceSplitKernel<<<dim3(kSplit, unsigned(d.out.count)), 256, 0, stream>>>(x, scratch, d);
    reduceSplitFinishKernel<<<unsigned(d.out.count), kSplit, 0, stream>>>(scratch, y, scale);
  } else if (d.innerReduced) {
    int64_t blocks = d.out.count < 65535 * 16 ? d.out.count : 65535 * 16;
    reduceRowKernel<<<unsigned(blocks), rowThreads(d.red.count), 0, stream>>>(x, y, d, scale);
  } else {
    int64_t blocks = (d.out.count + kColX - 1) / kColX;
    reduceColumnKernel<<<unsigned(blocks), dim3(kColX, kColY), 0, stream>>>(x, y, d, scale);
  }
}

// ---- host side: at load, the launch of every step ---------------------------

ReduceDesc reduceOf(const KernelOperands &k) {
  const plan::Buffer *x = k.inputs[0];
  std::vector<int64_t> axes = attrInts(k.instr->attrs, "axes");
  std::vector<bool> reduced(x->shape.size(), axes.empty());
  for (int64_t a : axes) reduced[size_t(normAxis(a, x->shape.size()))] = true;
  return reduceDesc(x->shape, reduced);
}

int64_t reduceScratch(const KernelOperands &k) {
  ReduceDesc d = reduceOf(k);
  if (d.out.count == 1) return allReduceScratchFloats(d.red.count);
  return reduceScratchFloats(d);
}

template <bool Mean> Launch prepareReduce(const KernelOperands &k) {
  ReduceDesc d = reduceOf(k);
  float scale = Mean ? float(1.0 / double(d.red.count)) : 1.f;
  if (Mean && d.red.count == 0) scale = NAN;
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  if (d.out.count == 1 && d.red.count > 0)
    return [=] { launchReduceAll(x, nullptr, y, d.red.count, scale, ctx.scratch, ctx.stream); };
  return [=] { launchReduceSum(x, y, d, scale, ctx.scratch, ctx.stream); };
}

Launch prepareBroadcastTo(const KernelOperands &k) {
  StridedDesc d = broadcastDesc(k.output->shape, k.inputs[0]->shape);
  const uint32_t *x = static_cast<const uint32_t *>(k.inPtr[0]);
  uint32_t *y = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGather(x, y, d, s); };
}

} // namespace

// Shared with the Loss family (mse_loss).

int64_t allReduceScratchFloats(int64_t n) { return allBlocks(n); }

void launchReduceAll(const float *a, const float *b, float *y, int64_t n, float scale,
                     float *scratch, cudaStream_t stream) {
  unsigned blocks = allBlocks(n);
  reduceAllPartialKernel<<<blocks, kAllThreads, 0, stream>>>(a, b, scratch, n);
  reduceAllFinishKernel<<<1, 1024, 0, stream>>>(scratch, blocks, y, scale);
}

namespace kernels::Reduce {
const CudaKernel Sum{reduceScratch, prepareReduce<false>};
const CudaKernel Mean{reduceScratch, prepareReduce<true>};
const CudaKernel BroadcastTo{nullptr, prepareBroadcastTo};
} // namespace kernels::Reduce

} // namespace mpc::runtime::cuda
