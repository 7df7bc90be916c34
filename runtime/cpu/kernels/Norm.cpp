//===- runtime/cpu/kernels/Norm.cpp - layer_norm, batch_norm, gradients -===//
//
// layer_norm: x seen as [rows, D], normalised over D. batch_norm: x seen as
// [outer, C, inner] around its channel axis, each channel normalised over
// its outer * inner elements, with the batch's statistics or the running
// ones given as operands 3 and 4. Statistics (mean, biased variance) and the
// gradients' sums are accumulated in double, like the reference kernels, so
// float32 results stay within a few ulps of them whatever the sizes.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include <algorithm>
#include <cmath>

namespace mpc::runtime::cpu {

namespace {

/// layer_norm and its backward ops, x f32[..., D]: sets outer = rows,
/// inner = D, scalar = eps.
void prepareRows(KernelInstance &k) {
  const TensorArg &x = k.in[0];
  k.inner = x.shape.back();
  k.outer = k.inner ? x.numel / k.inner : 0;
  k.scalar = attrFloat(k.attrMap(), "eps");
}

struct RowStats {
  double mean, rstd;
};

RowStats rowStats(const float *x, int64_t d, double eps) {
  double sum = 0;
  for (int64_t j = 0; j < d; ++j) sum += x[j];
  const double mean = sum / double(d);
  double sq = 0;
  for (int64_t j = 0; j < d; ++j) sq += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / std::sqrt(sq / double(d) + eps)};
}

// layer_norm(x, gamma, beta)
void runLayerNorm(const KernelInstance &k) {
  const int64_t d = k.inner;
  const float *g = k.in[1].f(), *b = k.in[2].f();
  for (int64_t r = 0; r < k.outer; ++r) {
    const float *x = k.in[0].f() + r * d;
    float *y = k.out.f() + r * d;
    const RowStats s = rowStats(x, d, k.scalar);
    for (int64_t j = 0; j < d; ++j) y[j] = float((x[j] - s.mean) * s.rstd * g[j] + b[j]);
  }
}

// layer_norm_grad(x, gamma, dy) -> dx = rstd (g - mean(g) - xhat mean(g xhat)),
// g = dy * gamma.
void runLayerNormGrad(const KernelInstance &k) {
  const int64_t d = k.inner;
  const float *gamma = k.in[1].f();
  for (int64_t r = 0; r < k.outer; ++r) {
    const float *x = k.in[0].f() + r * d, *dy = k.in[2].f() + r * d;
    float *dx = k.out.f() + r * d;
    const RowStats s = rowStats(x, d, k.scalar);
    double sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double g = double(dy[j]) * gamma[j];
      sumG += g;
      sumGX += g * (x[j] - s.mean) * s.rstd;
    }
    const double meanG = sumG / double(d), meanGX = sumGX / double(d);
    for (int64_t j = 0; j < d; ++j) {
      const double xhat = (x[j] - s.mean) * s.rstd;
      dx[j] = float(s.rstd * (double(dy[j]) * gamma[j] - meanG - xhat * meanGX));
    }
  }
}

// layer_norm_gamma_grad(x, dy) -> f32[D]: sum over rows of dy * xhat, each
// column summed in row order in double (scratch).
void prepareGammaGrad(KernelInstance &k) {
  prepareRows(k);
  k.scratch.assign(size_t(k.inner), 0.0);
}

void runGammaGrad(const KernelInstance &k) {
  const int64_t d = k.inner;
  std::vector<double> &acc = k.scratch;
  std::fill(acc.begin(), acc.end(), 0.0);
  for (int64_t r = 0; r < k.outer; ++r) {
    const float *x = k.in[0].f() + r * d, *dy = k.in[1].f() + r * d;
    const RowStats s = rowStats(x, d, k.scalar);
    for (int64_t j = 0; j < d; ++j) acc[size_t(j)] += double(dy[j]) * (x[j] - s.mean) * s.rstd;
  }
  for (int64_t j = 0; j < d; ++j) k.out.f()[j] = float(acc[size_t(j)]);
}

// --- batch_norm ---------------------------------------------------------

/// Sets [outer, axis, inner] of x around the channel axis (attribute
/// `axis`, in range: proven by the plan verifier).
void prepareChannels(KernelInstance &k, const TensorArg &x) {
  int64_t rank = x.rank();
  int64_t axis = attrInt(k.attrMap(), "axis");
  int64_t a = axis < 0 ? axis + rank : axis;
  k.outer = k.axis = k.inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < a) k.outer *= x.shape[size_t(i)];
    else if (i == a) k.axis = x.shape[size_t(i)];
    else k.inner *= x.shape[size_t(i)];
  }
}

/// Element j of channel c's block o: x[(o * C + c) * inner + j].
size_t at(const KernelInstance &k, int64_t o, int64_t c, int64_t j) {
  return size_t((o * k.axis + c) * k.inner + j);
}

/// Channel c's mean and 1/sqrt(var + eps): from x (biased variance, in
/// double), or from the running statistics at `run` (operands run, run + 1)
/// when the instruction has them.
RowStats channelStats(const KernelInstance &k, const float *x, int64_t c, double eps,
                      size_t run) {
  if (k.in.size() == run + 2) {
    double mean = k.in[run].f()[c], var = k.in[run + 1].f()[c];
    return {mean, 1.0 / std::sqrt(var + eps)};
  }
  double sum = 0;
  for (int64_t o = 0; o < k.outer; ++o)
    for (int64_t j = 0; j < k.inner; ++j) sum += x[at(k, o, c, j)];
  const double count = double(k.outer * k.inner), mean = sum / count;
  double sq = 0;
  for (int64_t o = 0; o < k.outer; ++o)
    for (int64_t j = 0; j < k.inner; ++j) {
      const double d = x[at(k, o, c, j)] - mean;
      sq += d * d;
    }
  return {mean, 1.0 / std::sqrt(sq / count + eps)};
}

// batch_norm(x, gamma, beta[, running_mean, running_var]), and its backward
// ops below: [outer, axis, inner] around x's channel axis, scalar = eps.
void prepareBatchNorm(KernelInstance &k) {
  prepareChannels(k, k.in[0]);
  k.scalar = attrFloat(k.attrMap(), "eps");
}

void runBatchNorm(const KernelInstance &k) {
  const float *x = k.in[0].f(), *g = k.in[1].f(), *b = k.in[2].f();
  float *y = k.out.f();
  for (int64_t c = 0; c < k.axis; ++c) {
    const RowStats s = channelStats(k, x, c, k.scalar, 3);
    const double scale = s.rstd * g[c];
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t j = 0; j < k.inner; ++j) {
        const size_t i = at(k, o, c, j);
        y[i] = float((x[i] - s.mean) * scale + b[c]);
      }
  }
}

// batch_norm_grad(x, gamma, dy[, running_mean, running_var]): with batch
// statistics rstd (g - mean(g) - xhat mean(g xhat)) per channel, g = dy *
// gamma; with running ones (constants) dy * gamma * rstd.
void runBatchNormGrad(const KernelInstance &k) {
  const float *x = k.in[0].f(), *gamma = k.in[1].f(), *dy = k.in[2].f();
  float *dx = k.out.f();
  const bool running = k.in.size() == 5;
  const double count = double(k.outer * k.inner);
  for (int64_t c = 0; c < k.axis; ++c) {
    const RowStats s = channelStats(k, x, c, k.scalar, 3);
    if (running) {
      const double scale = s.rstd * gamma[c];
      for (int64_t o = 0; o < k.outer; ++o)
        for (int64_t j = 0; j < k.inner; ++j) {
          const size_t i = at(k, o, c, j);
          dx[i] = float(dy[i] * scale);
        }
      continue;
    }
    double sumG = 0, sumGX = 0;
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t j = 0; j < k.inner; ++j) {
        const size_t i = at(k, o, c, j);
        const double g = double(dy[i]) * gamma[c];
        sumG += g;
        sumGX += g * (x[i] - s.mean) * s.rstd;
      }
    const double meanG = sumG / count, meanGX = sumGX / count;
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t j = 0; j < k.inner; ++j) {
        const size_t i = at(k, o, c, j);
        const double xhat = (x[i] - s.mean) * s.rstd;
        dx[i] = float(s.rstd * (double(dy[i]) * gamma[c] - meanG - xhat * meanGX));
      }
  }
}

// batch_norm_gamma_grad(x, dy[, running_mean, running_var]) -> f32[C]: the
// sum over each channel of dy * xhat, in double.
void runBatchNormGammaGrad(const KernelInstance &k) {
  const float *x = k.in[0].f(), *dy = k.in[1].f();
  for (int64_t c = 0; c < k.axis; ++c) {
    const RowStats s = channelStats(k, x, c, k.scalar, 2);
    double acc = 0;
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t j = 0; j < k.inner; ++j) {
        const size_t i = at(k, o, c, j);
        acc += double(dy[i]) * (x[i] - s.mean) * s.rstd;
      }
    k.out.f()[c] = float(acc);
  }
}

// batch_norm_update(running_mean, running_var, x): in place, per channel,
// running = momentum * running + (1 - momentum) * batch statistic (mean,
// biased variance); the result is the new running mean.
void prepareBatchNormUpdate(KernelInstance &k) {
  prepareChannels(k, k.in[2]);
  k.scalar = attrFloat(k.attrMap(), "momentum");
}

void runBatchNormUpdate(const KernelInstance &k) {
  const float *x = k.in[2].f();
  float *mean = k.in[0].f(), *var = k.in[1].f();
  const double m = k.scalar, count = double(k.outer * k.inner);
  for (int64_t c = 0; c < k.axis; ++c) {
    // The variance itself (not 1/sqrt(var + eps)): the statistics are
    // recomputed here, nothing is kept from the forward op.
    double sum = 0;
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t j = 0; j < k.inner; ++j) sum += x[at(k, o, c, j)];
    const double bm = sum / count;
    double sq = 0;
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t j = 0; j < k.inner; ++j) {
        const double d = x[at(k, o, c, j)] - bm;
        sq += d * d;
      }
    mean[c] = float(m * mean[c] + (1.0 - m) * bm);
    var[c] = float(m * var[c] + (1.0 - m) * (sq / count));
  }
  // The result shares running_mean's buffer (codegen aliases an in-place
  // update's result to its operand 0); copy only if it does not.
  if (k.out.f() != mean) std::copy(mean, mean + k.axis, k.out.f());
}

} // namespace

namespace kernels::Norm {
const CpuKernel LayerNorm{prepareRows, runLayerNorm};
const CpuKernel LayerNormGrad{prepareRows, runLayerNormGrad};
const CpuKernel LayerNormGammaGrad{prepareGammaGrad, runGammaGrad};
const CpuKernel BatchNorm{prepareBatchNorm, runBatchNorm};
const CpuKernel BatchNormGrad{prepareBatchNorm, runBatchNormGrad};
const CpuKernel BatchNormGammaGrad{prepareBatchNorm, runBatchNormGammaGrad};
const CpuKernel BatchNormUpdate{prepareBatchNormUpdate, runBatchNormUpdate};
} // namespace kernels::Norm

} // namespace mpc::runtime::cpu
