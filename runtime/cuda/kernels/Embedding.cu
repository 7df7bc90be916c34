//===- runtime/cuda/kernels/Embedding.cu - embedding and its gradient -----===//
//
// ids i32 of any shape index the rows of a table f32[V, D]; the result and
// dy are f32 ids.shape + [D], seen as [N, D] with N the ids' count. The only
// ops that index with data, so the only ones besides cross-entropy that
// report bad values on the device.
//
// embedding gathers table rows by id, one warp per position. An id outside
// [0, V) cannot throw on the device: it is reported to the device's
// DataError record (read by the host when it next waits for the device) and
// its row of the result is zero.
//
// embedding_grad adds the rows of dy into the rows of the table their ids
// name. Float atomics would make the sums depend on timing, so the positions
// are first sorted by id with CUB's radix sort, which is stable (positions of
// one id stay in increasing order) and whose output depends only on its
// input; a bad id gets the key V, past every row, and is reported. Then one
// block per table row finds its run of positions by binary search and sums
// their dy rows in increasing position, threads across the row: the same
// order as the CPU runtime, and no atomics. Rows no id names are zero.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/CudaCheck.h"

#include <climits>
#include <cub/device/device_radix_sort.cuh>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

// ---- device kernels and their launchers --------------------------------------

__global__ void embeddingKernel(const int32_t *__restrict__ ids, const float *__restrict__ table,
                                float *__restrict__ out, int64_t n, int64_t vocab, int64_t d,
                                DataErrorSink err) {
  int lane = threadIdx.x & 31;
  for (int64_t p = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); p < n;
       p += int64_t(gridDim.x) * kWarpsPerBlock) {
    int32_t id = ids[p];
    float *row = out + p * d;
    if (id < 0 || id >= vocab) { // the whole warp takes this branch
      if (lane == 0) reportBadIndex(err, p, id, vocab);
      for (int64_t j = lane; j < d; j += 32) row[j] = 0.f;
      continue;
    }
    const float *src = table + int64_t(id) * d;
    for (int64_t j = lane; j < d; j += 32) row[j] = src[j];
  }
}

/// The sort's input: key = the id (vocab for a bad one, reported), value =
/// the position.
__global__ void sortInputKernel(const int32_t *__restrict__ ids, uint32_t *__restrict__ keys,
                                int32_t *__restrict__ positions, int64_t n, int64_t vocab,
                                DataErrorSink err) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < n;
       p += int64_t(gridDim.x) * blockDim.x) {
    int32_t id = ids[p];
    bool ok = id >= 0 && id < vocab;
    if (!ok) reportBadIndex(err, p, id, vocab);
    keys[p] = ok ? uint32_t(id) : uint32_t(vocab);
    positions[p] = int32_t(p);
  }
}

/// First index i in [0, n) with keys[i] >= v (n when none).
__device__ inline int64_t lowerBound(const uint32_t *keys, int64_t n, uint32_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// out[v, :] = sum of dy[positions[i], :] over the run of key v, in order.
__global__ void embeddingGradRowsKernel(const uint32_t *__restrict__ keys,
                                        const int32_t *__restrict__ positions,
                                        const float *__restrict__ dy, float *__restrict__ out,
                                        int64_t n, int64_t vocab, int64_t d) {
  __shared__ int64_t run[2];
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    if (threadIdx.x == 0) {
      run[0] = lowerBound(keys, n, uint32_t(v));
      run[1] = lowerBound(keys, n, uint32_t(v + 1));
    }
    __syncthreads();
    int64_t begin = run[0], end = run[1];
    float *row = out + v * d;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float acc = 0.f;
      for (int64_t i = begin; i < end; ++i) acc += dy[int64_t(positions[i]) * d + j];
      row[j] = acc;
    }
    __syncthreads(); // run[] is rewritten for the next row
  }
}

/// Bits of the sort keys: enough for [0, vocab] (vocab marks a bad id).
int keyBits(int64_t vocab) {
  int bits = 1;
  while (bits < 32 && (int64_t(1) << bits) <= vocab) ++bits;
  return bits;
}

/// CUB's temporary storage for sorting n pairs, in bytes.
size_t sortTempBytes(int64_t n, int64_t vocab) {
  size_t bytes = 0;
  cudaCheck(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint32_t *>(nullptr),
                                            static_cast<uint32_t *>(nullptr),
                                            static_cast<const int32_t *>(nullptr),
                                            static_cast<int32_t *>(nullptr), int(n), 0,
                                            keyBits(vocab)),
            "cub::DeviceRadixSort::SortPairs (size)");
  return bytes;
}

/// Floats of scratch holding `bytes`, rounded up to keep what follows
/// 256-byte aligned.
int64_t floatsFor(size_t bytes) { return int64_t((bytes + 255) / 256 * 64); }

/// out[n, :] = table[ids[n], :] for n in [0, n); an id outside [0, vocab) is
/// reported to `err` and gives a zero row.
void launchEmbedding(const int32_t *ids, const float *table, float *out, int64_t n,
                     int64_t vocab, int64_t d, DataErrorSink err, cudaStream_t stream) {
  if (n == 0) return;
  embeddingKernel<<<warpGrid(n), 32 * kWarpsPerBlock, 0, stream>>>(ids, table, out, n, vocab, d,
                                                                   err);
}

// Scratch: [CUB's storage | keys in | positions in | keys out | positions out],
// each array n 4-byte elements.
int64_t embeddingGradScratchFloats(int64_t n, int64_t vocab) {
  if (n == 0) return 0;
  return floatsFor(sortTempBytes(n, vocab)) + 4 * n;
}

/// out[v, :] = sum of dy[n, :] over the positions n with ids[n] == v, in
/// increasing n (zero when there is none); ids outside [0, vocab) are
/// reported and skipped. The positions are sorted by id with a stable radix
/// sort in `scratch` (embeddingGradScratchFloats floats), then one block per
/// row of the result sums its positions in order.
void launchEmbeddingGrad(const int32_t *ids, const float *dy, float *out, int64_t n,
                         int64_t vocab, int64_t d, float *scratch, DataErrorSink err,
                         cudaStream_t stream) {
  if (n == 0) {
    launchFill(out, vocab * d, 0.f, stream);
    return;
  }
  size_t tempBytes = sortTempBytes(n, vocab);
  float *arrays = scratch + floatsFor(tempBytes);
  uint32_t *keysIn = reinterpret_cast<uint32_t *>(arrays), *keysOut = keysIn + 2 * n;
  int32_t *posIn = reinterpret_cast<int32_t *>(arrays + n), *posOut = posIn + 2 * n;
  sortInputKernel<<<gridFor(n), kThreads, 0, stream>>>(ids, keysIn, posIn, n, vocab, err);
  if (vocab == 0 || d == 0) return; // an empty result; the ids were still checked
  cudaCheck(cub::DeviceRadixSort::SortPairs(scratch, tempBytes, keysIn, keysOut, posIn, posOut,
                                            int(n), 0, keyBits(vocab), stream),
            "cub::DeviceRadixSort::SortPairs");
  unsigned threads = 32;
  while (threads < 256 && int64_t(threads) < d) threads <<= 1;
  int64_t blocks = vocab < (int64_t(1) << 20) ? vocab : int64_t(1) << 20;
  embeddingGradRowsKernel<<<unsigned(blocks), threads, 0, stream>>>(keysOut, posOut, dy, out, n,
                                                                    vocab, d);
}

// ---- host side: at load, the launch of every step ---------------------------

/// The ids' count, within the kernels' int range. Types and shapes: proven by
/// the plan verifier.
int64_t idCount(const plan::Buffer *ids) {
  if (ids->numElements() > INT_MAX)
    throw RuleError("more than " + std::to_string(INT_MAX) + " ids in buffer '" + ids->name + "'");
  return ids->numElements();
}

Launch prepareEmbedding(const KernelOperands &k) {
  const plan::Buffer *table = k.inputs[1];
  int64_t vocab = table->shape[0], d = table->shape[1];
  int64_t n = idCount(k.inputs[0]);
  const int32_t *idp = static_cast<const int32_t *>(k.inPtr[0]);
  const float *tp = cf(k.inPtr[1]);
  float *out = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] { launchEmbedding(idp, tp, out, n, vocab, d, ctx.dataError, ctx.stream); };
}

/// N, V (num_embeddings, the result's rows) and D of embedding_grad, within
/// the kernels' int range.
struct GradShape {
  int64_t n = 0, vocab = 0, d = 0;
};
GradShape checkGrad(const KernelOperands &k) {
  GradShape g;
  g.n = idCount(k.inputs[0]);
  g.vocab = attrInt(k.instr->attrs, "num_embeddings");
  if (g.vocab > INT_MAX)
    throw RuleError("num_embeddings " + std::to_string(g.vocab) + " out of range");
  g.d = k.output->shape[1];
  return g;
}

int64_t embeddingGradScratch(const KernelOperands &k) {
  GradShape g = checkGrad(k);
  return embeddingGradScratchFloats(g.n, g.vocab);
}

Launch prepareEmbeddingGrad(const KernelOperands &k) {
  GradShape g = checkGrad(k);
  const int32_t *idp = static_cast<const int32_t *>(k.inPtr[0]);
  const float *dy = cf(k.inPtr[1]);
  float *out = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchEmbeddingGrad(idp, dy, out, g.n, g.vocab, g.d, ctx.scratch, ctx.dataError, ctx.stream);
  };
}

} // namespace

namespace kernels::Embedding {
const CudaKernel Embedding{nullptr, prepareEmbedding};
const CudaKernel EmbeddingGrad{embeddingGradScratch, prepareEmbeddingGrad};
} // namespace kernels::Embedding

} // namespace mpc::runtime::cuda
