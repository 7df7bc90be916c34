//===- runtime/cuda/kernels/Norm.cu - layer_norm and its gradients ------===//
//
// layer_norm over the last axis, a tensor seen as [rows, d]. One warp per
// row: lanes stride over the row and combine in the fixed butterfly of
// warpSum. The row statistics accumulate in float64 in two passes (mean,
// then the biased variance around it), as the CPU and reference kernels
// do, so a row of large values with a small spread keeps its variance; the
// normalised value is formed in float64 too and stored as float32.
//
// layer_norm_gamma_grad sums over rows, per column: the row statistics go
// to scratch first (a warp per row), then the rows are cut into a fixed
// number of chunks (a function of the shape only), each chunk summed per
// column in row order by a 32 x 8 block (32 columns side by side, 8 row
// strides, a fixed tree), and a last pass adds each column's chunk sums in
// order. No atomics: the result is the same run after run.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

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

} // namespace

void launchLayerNorm(const float *x, const float *gamma, const float *beta, float *y,
                     int64_t rows, int64_t d, double eps, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  layerNormKernel<<<warpGrid(rows), 32 * kWarpsPerBlock, 0, stream>>>(x, gamma, beta, y, rows,
                                                                      d, eps);
}

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

} // namespace mpc::runtime::cuda
