//===- runtime/cuda/kernels/Norm.cu - layer_norm, batch_norm and their gradients ===//
//
// layer_norm normalises the last axis: x f32[..., D] seen as [rows, D], with
// gamma and beta f32[D]. One warp per row: lanes stride over the row and
// combine in the fixed butterfly of warpSum. The row statistics accumulate in
// float64 in two passes (mean, then the biased variance around it), as the
// CPU and reference kernels do, so a row of large values with a small spread
// keeps its variance; the normalised value is formed in float64 too and
// stored as float32. The backward ops recompute the row statistics from x
// (the forward op keeps none).
//
// layer_norm_gamma_grad sums over rows, per column: the row statistics go to
// scratch first (a warp per row), then the rows are cut into a fixed number
// of chunks (a function of the shape only), each chunk summed per column in
// row order by a 32 x 8 block (32 columns side by side, 8 row strides, a
// fixed tree), and a last pass adds each column's chunk sums in order. No
// atomics: the result is the same run after run.
//
// batch_norm normalises per channel, x seen as [outer, C, inner] around its
// `axis`; with operands running_mean and running_var (C each) it uses those
// instead of the batch's statistics, and so do its backward ops.
// batch_norm_update folds the batch statistics into the running ones in
// place. Each runs one 256-thread block per channel: the threads stride over
// the channel's elements, and the block sums in float64 over a fixed tree
// (blockSum of Common.cuh), so the statistics do not depend on timing. The
// backward block reduces first and then writes its channel's dx, so it needs
// no scratch.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

/// batch_norm and its gradients over x seen as [outer, c, inner] (c the
/// channels): one block per channel, statistics and sums in float64 over a
/// fixed tree. `runMean`/`runVar` null: the channel's batch statistics
/// (biased variance), else those running statistics.
struct ChannelShape {
  int64_t outer = 1, c = 1, inner = 1;
};

// ---- device kernels and their launchers --------------------------------------

constexpr int kColX = 32, kColY = 8; // gamma-gradient block: columns x row strides
constexpr int64_t kMaxChunks = 64, kRowsPerChunk = 256;

/// Mean and 1 / sqrt(biased variance + eps) of the warp's row, in every lane.
__device__ inline void rowMoments(const float *xr, int64_t d, int lane, double eps,
                                  double &mean, double &rstd) {
  double s = 0;
  for (int64_t j = lane; j < d; j += 32) s += double(xr[j]);
  mean = warpSum(s) / double(d);
  double v = 0;
  for (int64_t j = lane; j < d; j += 32) {
    double c = double(xr[j]) - mean;
    v += c * c;
  }
  rstd = 1.0 / sqrt(warpSum(v) / double(d) + eps);
}

__global__ void layerNormKernel(const float *__restrict__ x, const float *__restrict__ gamma,
                                const float *__restrict__ beta, float *__restrict__ y,
                                int64_t rows, int64_t d, double eps) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float *xr = x + row * d;
    double mean, rstd;
    rowMoments(xr, d, lane, eps, mean, rstd);
    float *yr = y + row * d;
    for (int64_t j = lane; j < d; j += 32) {
      double xhat = (double(xr[j]) - mean) * rstd;
      yr[j] = float(xhat * double(gamma[j]) + double(beta[j]));
    }
  }
}

__global__ void layerNormGradKernel(const float *__restrict__ x, const float *__restrict__ gamma,
                                    const float *__restrict__ dy, float *__restrict__ dx,
                                    int64_t rows, int64_t d, double eps) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float *xr = x + row * d, *dyr = dy + row * d;
    double mean, rstd;
    rowMoments(xr, d, lane, eps, mean, rstd);
    double sg = 0, sgx = 0; // sums of g and g * xhat, g = dy * gamma
    for (int64_t j = lane; j < d; j += 32) {
      double g = double(dyr[j]) * double(gamma[j]);
      sg += g;
      sgx += g * (double(xr[j]) - mean) * rstd;
    }
    double meanG = warpSum(sg) / double(d), meanGX = warpSum(sgx) / double(d);
    float *dxr = dx + row * d;
    for (int64_t j = lane; j < d; j += 32) {
      double xhat = (double(xr[j]) - mean) * rstd;
      double g = double(dyr[j]) * double(gamma[j]);
      dxr[j] = float(rstd * (g - meanG - xhat * meanGX));
    }
  }
}

/// stats[2 r] = mean, stats[2 r + 1] = rstd of row r.
__global__ void rowStatsKernel(const float *__restrict__ x, double *__restrict__ stats,
                               int64_t rows, int64_t d, double eps) {
  int lane = threadIdx.x & 31;
  for (int64_t row = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5); row < rows;
       row += int64_t(gridDim.x) * kWarpsPerBlock) {
    double mean, rstd;
    rowMoments(x + row * d, d, lane, eps, mean, rstd);
    if (lane == 0) {
      stats[2 * row] = mean;
      stats[2 * row + 1] = rstd;
    }
  }
}

/// partial[c * d + j] = sum over the rows of chunk c (blockIdx.y) of
/// dy[r, j] * xhat[r, j], for the block's 32 columns.
__global__ void gammaGradPartialKernel(const float *__restrict__ x, const float *__restrict__ dy,
                                       const double *__restrict__ stats,
                                       double *__restrict__ partial, int64_t rows, int64_t d,
                                       int64_t chunk) {
  __shared__ double shared[kColY][kColX + 1];
  int64_t j = blockIdx.x * int64_t(kColX) + threadIdx.x;
  int64_t begin = blockIdx.y * chunk;
  int64_t end = begin + chunk < rows ? begin + chunk : rows;
  double acc = 0;
  if (j < d)
    for (int64_t r = begin + threadIdx.y; r < end; r += kColY) {
      int64_t i = r * d + j;
      acc += double(dy[i]) * ((double(x[i]) - stats[2 * r]) * stats[2 * r + 1]);
    }
  shared[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  for (int s = kColY / 2; s > 0; s >>= 1) {
    if (int(threadIdx.y) < s) shared[threadIdx.y][threadIdx.x] += shared[threadIdx.y + s][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && j < d) partial[blockIdx.y * d + j] = shared[0][threadIdx.x];
}

__global__ void gammaGradFinishKernel(const double *__restrict__ partial,
                                      float *__restrict__ dgamma, int64_t d, int64_t chunks) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < d;
       j += int64_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += partial[c * d + j];
    dgamma[j] = float(s);
  }
}

/// Chunks of rows of the gamma gradient: at least kRowsPerChunk rows each
/// (but one chunk for fewer), at most kMaxChunks of them.
int64_t gammaChunks(int64_t rows) {
  int64_t c = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  if (c < 1) c = 1;
  return c < kMaxChunks ? c : kMaxChunks;
}

/// layer_norm over rows of `d` elements, statistics in float64 (biased
/// variance): y = (x - mean) / sqrt(var + eps) * gamma + beta.
void launchLayerNorm(const float *x, const float *gamma, const float *beta, float *y,
                     int64_t rows, int64_t d, double eps, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  layerNormKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(x, gamma, beta, y, rows,
                                                                      d, eps);
}

/// dx of layer_norm: rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
void launchLayerNormGrad(const float *x, const float *gamma, const float *dy, float *dx,
                         int64_t rows, int64_t d, double eps, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  layerNormGradKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(x, gamma, dy, dx,
                                                                          rows, d, eps);
}

// Scratch: [stats: 2 doubles per row | partial sums: chunks x d doubles].
int64_t layerNormGammaGradScratchFloats(int64_t rows, int64_t d) {
  return 2 * (2 * rows + gammaChunks(rows) * d);
}

/// dgamma[j] = sum over rows r of dy[r, j] * xhat[r, j]: the row statistics
/// into scratch, then a fixed split of the rows per column, then the partial
/// sums of each column in order. `scratch` holds layerNormGammaGradScratchFloats.
void launchLayerNormGammaGrad(const float *x, const float *dy, float *dgamma, int64_t rows,
                              int64_t d, double eps, float *scratch, cudaStream_t stream) {
  if (d == 0) return;
  if (rows == 0) {
    launchFill(dgamma, d, 0.f, stream);
    return;
  }
  double *stats = reinterpret_cast<double *>(scratch), *partial = stats + 2 * rows;
  int64_t chunks = gammaChunks(rows), chunk = (rows + chunks - 1) / chunks;
  rowStatsKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(x, stats, rows, d, eps);
  dim3 grid(unsigned((d + kColX - 1) / kColX), unsigned(chunks));
  gammaGradPartialKernel<<<grid, dim3(kColX, kColY), 0, stream>>>(x, dy, stats, partial, rows, d,
                                                                  chunk);
  gammaGradFinishKernel<<<gridFor(d), kThreads, 0, stream>>>(partial, dgamma, d, chunks);
}

constexpr int kChannelThreads = 256;

/// Flat index of element e (of outer * inner) of channel c.
__device__ inline int64_t channelIndex(ChannelShape s, int64_t c, int64_t e) {
  return ((e / s.inner) * s.c + c) * s.inner + e % s.inner;
}

/// Mean and biased variance of channel c (blockIdx.x) of x, in every thread.
__device__ inline void channelMoments(const float *x, ChannelShape s, int64_t c, double *shared,
                                      double &mean, double &var) {
  const int64_t n = s.outer * s.inner;
  double acc = 0;
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) acc += double(x[channelIndex(s, c, e)]);
  mean = blockSum(acc, shared) / double(n);
  acc = 0;
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    double d = double(x[channelIndex(s, c, e)]) - mean;
    acc += d * d;
  }
  var = blockSum(acc, shared) / double(n);
}

/// Mean and rstd of channel c: the running statistics when given, else the batch's.
__device__ inline void channelStats(const float *x, const float *runMean, const float *runVar,
                                    ChannelShape s, int64_t c, double eps, double *shared,
                                    double &mean, double &rstd) {
  double var;
  if (runMean) {
    mean = double(runMean[c]);
    var = double(runVar[c]);
  } else {
    channelMoments(x, s, c, shared, mean, var);
  }
  rstd = 1.0 / sqrt(var + eps);
}

__global__ void batchNormKernel(const float *__restrict__ x, const float *__restrict__ gamma,
                                const float *__restrict__ beta, const float *runMean,
                                const float *runVar, float *__restrict__ y, ChannelShape s,
                                double eps) {
  __shared__ double shared[kChannelThreads];
  const int64_t c = blockIdx.x, n = s.outer * s.inner;
  double mean, rstd;
  channelStats(x, runMean, runVar, s, c, eps, shared, mean, rstd);
  const double scale = rstd * double(gamma[c]), shift = double(beta[c]);
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    int64_t i = channelIndex(s, c, e);
    y[i] = float((double(x[i]) - mean) * scale + shift);
  }
}

__global__ void batchNormGradKernel(const float *__restrict__ x, const float *__restrict__ gamma,
                                    const float *__restrict__ dy, const float *runMean,
                                    const float *runVar, float *__restrict__ dx, ChannelShape s,
                                    double eps) {
  __shared__ double shared[kChannelThreads];
  const int64_t c = blockIdx.x, n = s.outer * s.inner;
  double mean, rstd;
  channelStats(x, runMean, runVar, s, c, eps, shared, mean, rstd);
  const double gk = double(gamma[c]);
  if (runMean) {
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
      int64_t i = channelIndex(s, c, e);
      dx[i] = float(double(dy[i]) * gk * rstd);
    }
    return;
  }
  double accG = 0, accGX = 0;
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    int64_t i = channelIndex(s, c, e);
    double g = double(dy[i]) * gk;
    accG += g;
    accGX += g * (double(x[i]) - mean) * rstd;
  }
  const double meanG = blockSum(accG, shared) / double(n);
  const double meanGX = blockSum(accGX, shared) / double(n);
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    int64_t i = channelIndex(s, c, e);
    double xhat = (double(x[i]) - mean) * rstd;
    dx[i] = float(rstd * (double(dy[i]) * gk - meanG - xhat * meanGX));
  }
}

__global__ void batchNormGammaGradKernel(const float *__restrict__ x,
                                         const float *__restrict__ dy, const float *runMean,
                                         const float *runVar, float *__restrict__ dgamma,
                                         ChannelShape s, double eps) {
  __shared__ double shared[kChannelThreads];
  const int64_t c = blockIdx.x, n = s.outer * s.inner;
  double mean, rstd;
  channelStats(x, runMean, runVar, s, c, eps, shared, mean, rstd);
  double acc = 0;
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    int64_t i = channelIndex(s, c, e);
    acc += double(dy[i]) * (double(x[i]) - mean) * rstd;
  }
  double total = blockSum(acc, shared);
  if (threadIdx.x == 0) dgamma[c] = float(total);
}

__global__ void batchNormUpdateKernel(float *runMean, float *runVar, const float *__restrict__ x,
                                      float *out, ChannelShape s, double momentum) {
  __shared__ double shared[kChannelThreads];
  const int64_t c = blockIdx.x;
  double mean, var;
  channelMoments(x, s, c, shared, mean, var);
  if (threadIdx.x == 0) {
    runMean[c] = float(momentum * double(runMean[c]) + (1.0 - momentum) * mean);
    runVar[c] = float(momentum * double(runVar[c]) + (1.0 - momentum) * var);
    if (out != runMean) out[c] = runMean[c];
  }
}

/// One block per channel; nothing to do without channels.
unsigned channelGrid(ChannelShape s) { return unsigned(s.c); }

/// y = (x - mean) * rstd * gamma + beta per channel.
void launchBatchNorm(const float *x, const float *gamma, const float *beta, const float *runMean,
                     const float *runVar, float *y, ChannelShape s, double eps,
                     cudaStream_t stream) {
  if (s.c == 0 || s.outer * s.inner == 0) return;
  batchNormKernel<<<channelGrid(s), kChannelThreads, 0, stream>>>(x, gamma, beta, runMean,
                                                                  runVar, y, s, eps);
}

/// dx: with batch statistics rstd * (g - mean(g) - xhat * mean(g * xhat)),
/// g = dy * gamma; with running ones dy * gamma * rstd.
void launchBatchNormGrad(const float *x, const float *gamma, const float *dy,
                         const float *runMean, const float *runVar, float *dx, ChannelShape s,
                         double eps, cudaStream_t stream) {
  if (s.c == 0 || s.outer * s.inner == 0) return;
  batchNormGradKernel<<<channelGrid(s), kChannelThreads, 0, stream>>>(x, gamma, dy, runMean,
                                                                      runVar, dx, s, eps);
}

/// dgamma[c] = sum over channel c of dy * xhat.
void launchBatchNormGammaGrad(const float *x, const float *dy, const float *runMean,
                              const float *runVar, float *dgamma, ChannelShape s, double eps,
                              cudaStream_t stream) {
  if (s.c == 0) return;
  if (s.outer * s.inner == 0) {
    launchFill(dgamma, s.c, 0.f, stream);
    return;
  }
  batchNormGammaGradKernel<<<channelGrid(s), kChannelThreads, 0, stream>>>(x, dy, runMean,
                                                                           runVar, dgamma, s,
                                                                           eps);
}

/// running = momentum * running + (1 - momentum) * batch statistic, in place
/// (mean, biased variance); `out` (the result) gets the new running mean
/// unless it is `runMean` itself.
void launchBatchNormUpdate(float *runMean, float *runVar, const float *x, float *out,
                           ChannelShape s, double momentum, cudaStream_t stream) {
  if (s.c == 0) return;
  // An empty batch has no statistics (0 / 0); as the CPU kernel, the
  // update then writes NaN, so it is launched all the same.
  batchNormUpdateKernel<<<channelGrid(s), kChannelThreads, 0, stream>>>(runMean, runVar, x, out,
                                                                        s, momentum);
}

// ---- host side: at load, the launch of every step ---------------------------

/// x f32 of rank >= 1 as [rows, D], D its last axis. The operand types, with
/// gamma, beta and dgamma f32[D]: proven by the plan verifier.
struct Rows {
  int64_t rows = 0, d = 0;
};
Rows rowsOf(const plan::Buffer *x) {
  Rows r;
  r.d = x->shape.back();
  r.rows = r.d == 0 ? 0 : x->numElements() / r.d;
  return r;
}

double epsOf(const KernelOperands &k) { return attrFloat(k.instr->attrs, "eps"); }

Launch prepareLayerNorm(const KernelOperands &k) {
  Rows r = rowsOf(k.inputs[0]);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *beta = cf(k.inPtr[2]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchLayerNorm(x, gamma, beta, y, r.rows, r.d, eps, s); };
}

Launch prepareLayerNormGrad(const KernelOperands &k) {
  Rows r = rowsOf(k.inputs[0]);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *dy = cf(k.inPtr[2]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchLayerNormGrad(x, gamma, dy, dx, r.rows, r.d, eps, s); };
}

int64_t gammaGradScratch(const KernelOperands &k) {
  Rows r = rowsOf(k.inputs[0]);
  return layerNormGammaGradScratchFloats(r.rows, r.d);
}

Launch prepareLayerNormGammaGrad(const KernelOperands &k) {
  Rows r = rowsOf(k.inputs[0]);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dgamma = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchLayerNormGammaGrad(x, dy, dgamma, r.rows, r.d, eps, ctx.scratch, ctx.stream);
  };
}

// --- batch_norm ---------------------------------------------------------

/// x f32 of rank >= 2 split around its channel axis (attribute `axis`). The
/// operand types, with the per-channel operands and dgamma f32[C]: proven by
/// the plan verifier.
ChannelShape channelsOf(const KernelOperands &k, const plan::Buffer *x) {
  int64_t rank = int64_t(x->shape.size());
  int64_t axis = attrInt(k.instr->attrs, "axis");
  int64_t a = axis < 0 ? axis + rank : axis;
  ChannelShape s;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < a) s.outer *= x->shape[size_t(i)];
    else if (i == a) s.c = x->shape[size_t(i)];
    else s.inner *= x->shape[size_t(i)];
  }
  return s;
}

/// Running mean and variance at operands first, first + 1, or nulls (the
/// plan verifier proved they come together).
struct Running {
  const float *mean = nullptr, *var = nullptr;
};
Running runningOf(const KernelOperands &k, size_t first) {
  if (k.inputs.size() != first + 2) return {};
  return {cf(k.inPtr[first]), cf(k.inPtr[first + 1])};
}

Launch prepareBatchNorm(const KernelOperands &k) {
  ChannelShape cs = channelsOf(k, k.inputs[0]);
  Running r = runningOf(k, 3);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *beta = cf(k.inPtr[2]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNorm(x, gamma, beta, r.mean, r.var, y, cs, eps, s); };
}

Launch prepareBatchNormGrad(const KernelOperands &k) {
  ChannelShape cs = channelsOf(k, k.inputs[0]);
  Running r = runningOf(k, 3);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *dy = cf(k.inPtr[2]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNormGrad(x, gamma, dy, r.mean, r.var, dx, cs, eps, s); };
}

Launch prepareBatchNormGammaGrad(const KernelOperands &k) {
  ChannelShape cs = channelsOf(k, k.inputs[0]);
  Running r = runningOf(k, 2);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dgamma = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNormGammaGrad(x, dy, r.mean, r.var, dgamma, cs, eps, s); };
}

Launch prepareBatchNormUpdate(const KernelOperands &k) {
  ChannelShape cs = channelsOf(k, k.inputs[2]);
  double momentum = attrFloat(k.instr->attrs, "momentum");
  // In place: the running statistics are the instruction's operands 0 and 1.
  float *mean = f(k.inPtr[0]), *var = f(k.inPtr[1]);
  const float *x = cf(k.inPtr[2]);
  float *out = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNormUpdate(mean, var, x, out, cs, momentum, s); };
}

} // namespace

namespace kernels::Norm {
const CudaKernel LayerNorm{nullptr, prepareLayerNorm};
const CudaKernel LayerNormGrad{nullptr, prepareLayerNormGrad};
const CudaKernel LayerNormGammaGrad{gammaGradScratch, prepareLayerNormGammaGrad};
const CudaKernel BatchNorm{nullptr, prepareBatchNorm};
const CudaKernel BatchNormGrad{nullptr, prepareBatchNormGrad};
const CudaKernel BatchNormGammaGrad{nullptr, prepareBatchNormGammaGrad};
const CudaKernel BatchNormUpdate{nullptr, prepareBatchNormUpdate};
} // namespace kernels::Norm

} // namespace mpc::runtime::cuda
