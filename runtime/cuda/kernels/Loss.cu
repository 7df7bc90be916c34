//===- runtime/cuda/kernels/Loss.cu - losses and their gradients ----------===//
//
// Cross-entropy takes logits f32[..., C] as rows of C classes. One warp per
// row computes logsumexp(row) minus the labelled logit into scratch (0 for a
// row labelled ignore_index), then a fixed two-stage reduction sums the rows'
// losses (a float tree) and counts the rows not ignored (an integer tree) and
// divides, so the loss is deterministic; no row counted gives 0 / 0, NaN
// (reduction "sum" skips the division: 0 then). The gradient needs the count
// before any row: the same two stages count into scratch first. A label
// outside [0, C) cannot throw on the device: it is reported to the device's
// DataError record (checked by the host when it next reads data back) and
// yields NaN. mse_loss is launchReduceAll (Reduce.cu) with the
// squared-difference form.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

// ---- device kernels and their launchers --------------------------------------

constexpr int kSumThreads = 256, kSumMaxBlocks = 1024, kSumPerThread = 8;

/// Blocks of the first stage over `rows` (a function of rows only).
unsigned sumBlocks(int64_t rows) {
  int64_t per = int64_t(kSumThreads) * kSumPerThread;
  int64_t b = (rows + per - 1) / per;
  if (b < 1) b = 1;
  if (b > kSumMaxBlocks) b = kSumMaxBlocks;
  return unsigned(b);
}

__device__ inline bool labelOk(int32_t label, int64_t classes, int64_t row, DataErrorSink err) {
  if (label >= 0 && label < classes) return true;
  reportBadIndex(err, row, label, classes);
  return false;
}

/// Row maximum and sum of exp(x - max) for the warp's row.
__device__ inline void rowStats(const float *xr, int64_t classes, int lane, float &mx,
                                float &sum) {
  mx = -INFINITY;
  for (int64_t j = lane; j < classes; j += 32) mx = fmaxf(mx, xr[j]);
  mx = warpMax(mx);
  sum = 0.f;
  for (int64_t j = lane; j < classes; j += 32) sum += expf(xr[j] - mx);
  sum = warpSum(sum);
}

__global__ void crossEntropyRowsKernel(const float *__restrict__ logits,
                                       const int32_t *__restrict__ labels,
                                       float *__restrict__ rowLoss, int64_t rows,
                                       int64_t classes, int64_t ignoreIndex, DataErrorSink err) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    int32_t label = labels[row];
    if (label == ignoreIndex) { // the whole warp takes this branch
      if (lane == 0) rowLoss[row] = 0.f;
      continue;
    }
    const float *xr = logits + row * classes;
    float mx, sum;
    rowStats(xr, classes, lane, mx, sum);
    if (lane == 0)
      rowLoss[row] = labelOk(label, classes, row, err) ? mx + logf(sum) - xr[label] : NAN;
  }
}

/// First stage: block b sums rowLoss (when given) and counts the rows not
/// labelled ignoreIndex over a grid-stride partition fixed by the row count.
__global__ void crossEntropySumKernel(const float *__restrict__ rowLoss,
                                      const int32_t *__restrict__ labels, int64_t rows,
                                      int64_t ignoreIndex, float *__restrict__ partialLoss,
                                      long long *__restrict__ partialCount) {
  __shared__ float shared[kSumThreads];
  __shared__ long long sharedCount[kSumThreads];
  float acc = 0.f;
  long long count = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (rowLoss) acc += rowLoss[i];
    count += labels[i] != ignoreIndex ? 1 : 0;
  }
  unsigned t = threadIdx.x;
  sharedCount[t] = count;
  float total = blockSum(acc, shared); // its barriers order sharedCount too
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sharedCount[t] += sharedCount[t + s];
    __syncthreads();
  }
  if (t == 0) {
    if (partialLoss) partialLoss[blockIdx.x] = total;
    partialCount[blockIdx.x] = sharedCount[0];
  }
}

/// Second stage, one block: loss[0] = sum / count (sum itself when `sum`)
/// when `loss` is given, and the count itself into *countOut when that is.
__global__ void crossEntropyFinishKernel(const float *__restrict__ partialLoss,
                                         const long long *__restrict__ partialCount, int blocks,
                                         float *__restrict__ loss,
                                         long long *__restrict__ countOut, bool sum) {
  __shared__ float shared[1024];
  __shared__ long long sharedCount[1024];
  unsigned t = threadIdx.x;
  float acc = 0.f;
  long long count = 0;
  for (int i = int(t); i < blocks; i += blockDim.x) {
    if (partialLoss) acc += partialLoss[i];
    count += partialCount[i];
  }
  sharedCount[t] = count;
  float total = blockSum(acc, shared);
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sharedCount[t] += sharedCount[t + s];
    __syncthreads();
  }
  if (t == 0) {
    if (loss) loss[0] = sum ? total : total / float(sharedCount[0]);
    if (countOut) *countOut = sharedCount[0];
  }
}

__global__ void crossEntropyGradKernel(const float *__restrict__ logits,
                                       const int32_t *__restrict__ labels,
                                       const float *__restrict__ dy,
                                       const long long *__restrict__ count,
                                       float *__restrict__ dx, int64_t rows, int64_t classes,
                                       int64_t ignoreIndex, bool sum, DataErrorSink err) {
  int lane = threadIdx.x & 31;
  // The mean's g is used only when some row is counted: count > 0.
  float g = sum ? dy[0] : dy[0] / float(*count);
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    float *dxr = dx + row * classes;
    int32_t label = labels[row];
    if (label == ignoreIndex) {
      for (int64_t j = lane; j < classes; j += 32) dxr[j] = 0.f;
      continue;
    }
    const float *xr = logits + row * classes;
    float mx, sum;
    rowStats(xr, classes, lane, mx, sum);
    float lse = mx + logf(sum);
    bool ok = label >= 0 && label < classes;
    if (!ok && lane == 0) labelOk(label, classes, row, err);
    for (int64_t j = lane; j < classes; j += 32) {
      float p = expf(xr[j] - lse) - (j == label ? 1.f : 0.f);
      dxr[j] = ok ? g * p : NAN;
    }
  }
}

// Scratch of the loss: [partial counts: blocks (int64) | partial losses:
// blocks | rowLoss: rows]; of the gradient: [partial counts: blocks (int64) |
// count (int64)]. The scratch is 256-byte aligned, so the int64s are too.
int64_t crossEntropyScratchFloats(int64_t rows) { return 3 * int64_t(sumBlocks(rows)) + rows; }
int64_t crossEntropyGradScratchFloats(int64_t rows) { return 2 * int64_t(sumBlocks(rows)) + 2; }

/// loss[0] = sum over counted rows n of (logsumexp(logits[n,:]) -
/// logits[n, labels[n]]) / (counted rows), a row being counted when its label
/// is not `ignoreIndex` (no row counted: NaN); with `sum` (reduction "sum")
/// not divided (no row counted: 0). A counted label outside [0, C)
/// is reported to `err` and makes the loss NaN. `scratch` holds
/// crossEntropyScratchFloats(rows) floats.
void launchSoftmaxCrossEntropy(const float *logits, const int32_t *labels, float *loss,
                               int64_t rows, int64_t classes, int64_t ignoreIndex, bool sum,
                               float *scratch, DataErrorSink err, cudaStream_t stream) {
  if (rows == 0) {
    launchFill(loss, 1, sum ? 0.f : NAN, stream);
    return;
  }
  unsigned blocks = sumBlocks(rows);
  long long *partialCount = reinterpret_cast<long long *>(scratch);
  float *partialLoss = scratch + 2 * blocks, *rowLoss = partialLoss + blocks;
  crossEntropyRowsKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(
      logits, labels, rowLoss, rows, classes, ignoreIndex, err);
  crossEntropySumKernel<<<blocks, kSumThreads, 0, stream>>>(rowLoss, labels, rows, ignoreIndex,
                                                            partialLoss, partialCount);
  crossEntropyFinishKernel<<<1, 1024, 0, stream>>>(partialLoss, partialCount, int(blocks), loss,
                                                   nullptr, sum);
}

/// dlogits = dy[0] * (softmax(logits) - onehot(labels)) / (counted rows) (not
/// divided with `sum`), 0 on
/// the rows labelled `ignoreIndex`; a bad label gives a NaN row (and is
/// reported). `scratch` holds crossEntropyGradScratchFloats(rows) floats (the
/// count of counted rows, found by a fixed two-stage integer sum).
void launchSoftmaxCrossEntropyGrad(const float *logits, const int32_t *labels, const float *dy,
                                   float *dlogits, int64_t rows, int64_t classes,
                                   int64_t ignoreIndex, bool sum, float *scratch,
                                   DataErrorSink err, cudaStream_t stream) {
  if (rows == 0) return;
  unsigned blocks = sumBlocks(rows);
  long long *partialCount = reinterpret_cast<long long *>(scratch), *count = partialCount + blocks;
  crossEntropySumKernel<<<blocks, kSumThreads, 0, stream>>>(nullptr, labels, rows, ignoreIndex,
                                                            nullptr, partialCount);
  crossEntropyFinishKernel<<<1, 1024, 0, stream>>>(nullptr, partialCount, int(blocks), nullptr,
                                                   count, false);
  crossEntropyGradKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(
      logits, labels, dy, count, dlogits, rows, classes, ignoreIndex, sum, err);
}

// ---- host side: at load, the launch of every step ---------------------------

int64_t mseScratch(const KernelOperands &k) {
  return allReduceScratchFloats(k.inputs[0]->numElements());
}

Launch prepareMse(const KernelOperands &k) {
  int64_t n = k.inputs[0]->numElements();
  float scale = float(1.0 / double(n));
  const float *p = cf(k.inPtr[0]), *t = cf(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] { launchReduceAll(p, t, y, n, scale, ctx.scratch, ctx.stream); };
}

/// logits f32[..., C] (rank >= 2, C >= 1) and labels i32[...], the logits'
/// shape without its last axis (proven by the plan verifier): rows = numel / C.
struct Logits {
  int64_t rows = 0, classes = 0, ignoreIndex = -100;
  bool sum = false; ///< reduction "sum" (else "mean")
};
Logits logitsOf(const KernelOperands &k) {
  const plan::Buffer *logits = k.inputs[0];
  Logits l;
  l.classes = logits->shape.back();
  l.rows = logits->numElements() / l.classes;
  l.ignoreIndex = attrInt(k.instr->attrs, "ignore_index");
  l.sum = attrString(k.instr->attrs, "reduction") == "sum";
  return l;
}

int64_t crossEntropyScratch(const KernelOperands &k) {
  return crossEntropyScratchFloats(logitsOf(k).rows);
}
int64_t crossEntropyGradScratch(const KernelOperands &k) {
  return crossEntropyGradScratchFloats(logitsOf(k).rows);
}

Launch prepareCrossEntropy(const KernelOperands &k) {
  Logits l = logitsOf(k);
  const float *logits = cf(k.inPtr[0]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropy(logits, labels, y, l.rows, l.classes, l.ignoreIndex, l.sum,
                              ctx.scratch, ctx.dataError, ctx.stream);
  };
}

Launch prepareCrossEntropyGrad(const KernelOperands &k) {
  Logits l = logitsOf(k);
  const float *logits = cf(k.inPtr[0]), *dy = cf(k.inPtr[2]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *dx = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropyGrad(logits, labels, dy, dx, l.rows, l.classes, l.ignoreIndex, l.sum,
                                  ctx.scratch, ctx.dataError, ctx.stream);
  };
}

} // namespace

namespace kernels::Loss {
const CudaKernel MseLoss{mseScratch, prepareMse};
const CudaKernel SoftmaxCrossEntropy{crossEntropyScratch, prepareCrossEntropy};
const CudaKernel SoftmaxCrossEntropyGrad{crossEntropyGradScratch, prepareCrossEntropyGrad};
} // namespace kernels::Loss

} // namespace mpc::runtime::cuda
