//===- runtime/cuda/kernels/Loss.cu - cross-entropy and its gradient ----===//
//
// softmax_cross_entropy: one warp per row computes logsumexp(row) minus the
// labelled logit into scratch, then the fixed two-stage full reduction of
// Reduce.cu takes the mean, so the loss is deterministic. A label outside
// [0, C) cannot throw on the device: it records its row in the device's error
// flag (checked by the host when it next reads data back) and yields NaN.
// mse_loss is launchReduceAll with the squared-difference form.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

__device__ inline bool labelOk(int32_t label, int64_t classes, int64_t row, int *errorFlag) {
  if (label >= 0 && label < classes) return true;
  atomicCAS(errorFlag, 0, int(row + 1));
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
                                       int64_t classes, int *errorFlag) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float *xr = logits + row * classes;
    float mx, sum;
    rowStats(xr, classes, lane, mx, sum);
    if (lane == 0) {
      int32_t label = labels[row];
      rowLoss[row] = labelOk(label, classes, row, errorFlag) ? mx + logf(sum) - xr[label] : NAN;
    }
  }
}

__global__ void crossEntropyGradKernel(const float *__restrict__ logits,
                                       const int32_t *__restrict__ labels,
                                       const float *__restrict__ dy, float *__restrict__ dx,
                                       int64_t rows, int64_t classes, int *errorFlag) {
  int lane = threadIdx.x & 31;
  float g = dy[0] / float(rows);
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float *xr = logits + row * classes;
    float mx, sum;
    rowStats(xr, classes, lane, mx, sum);
    float lse = mx + logf(sum);
    int32_t label = labels[row];
    bool ok = label >= 0 && label < classes;
    if (!ok && lane == 0) labelOk(label, classes, row, errorFlag);
    for (int64_t j = lane; j < classes; j += 32) {
      float p = expf(xr[j] - lse) - (j == label ? 1.f : 0.f);
      dx[row * classes + j] = ok ? g * p : NAN;
    }
  }
}

} // namespace

int64_t crossEntropyScratchFloats(int64_t rows) { return rows + allReduceScratchFloats(rows); }

void launchSoftmaxCrossEntropy(const float *logits, const int32_t *labels, float *loss,
                               int64_t rows, int64_t classes, float *scratch, int *errorFlag,
                               cudaStream_t stream) {
  if (rows == 0) {
    launchFill(loss, 1, NAN, stream);
    return;
  }
  crossEntropyRowsKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(
      logits, labels, scratch, rows, classes, errorFlag);
  launchReduceAll(scratch, nullptr, loss, rows, 1.f / float(rows), scratch + rows, stream);
}

void launchSoftmaxCrossEntropyGrad(const float *logits, const int32_t *labels, const float *dy,
                                   float *dlogits, int64_t rows, int64_t classes, int *errorFlag,
                                   cudaStream_t stream) {
  if (rows == 0) return;
  crossEntropyGradKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(
      logits, labels, dy, dlogits, rows, classes, errorFlag);
}

} // namespace mpc::runtime::cuda
