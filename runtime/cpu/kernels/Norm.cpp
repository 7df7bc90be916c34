//===- runtime/cpu/kernels/Norm.cpp - layer_norm and its gradients ------===//
//
// x seen as [rows, D], normalised over D. Statistics (mean, biased variance)
// and the gradient's row sums are accumulated in double, like the reference
// kernel, so float32 results stay within a few ulps of it whatever D is.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

#include <cmath>

namespace mpc::runtime::cpu {

namespace {

/// Checks x f32[..., D] and a vector operand f32[D]; sets outer = rows,
/// inner = D, scalar = eps.
void prepareRows(KernelInstance &k, const TensorArg &x, const std::string &xName) {
  requireDType(x, plan::DType::F32, "operand '" + xName + "'");
  requireDType(k.out, plan::DType::F32, "the result");
  if (x.rank() < 1)
    throw RuleError("operand '" + xName + "' must have rank >= 1, got a scalar");
  k.inner = x.shape.back();
  k.outer = k.inner ? x.numel / k.inner : 0;
  k.scalar = attrFloat(k.attrMap(), "eps", 1e-5);
}

void requireVector(const TensorArg &v, int64_t d, const std::string &name) {
  requireDType(v, plan::DType::F32, "operand '" + name + "'");
  if (v.rank() != 1 || v.shape[0] != d)
    throw RuleError("operand '" + name + "' must be f32[" + std::to_string(d) + "], got " +
                    plan::shapeText(v.shape));
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
void prepareLayerNorm(KernelInstance &k) {
  prepareRows(k, k.in[0], "x");
  requireVector(k.in[1], k.inner, "gamma");
  requireVector(k.in[2], k.inner, "beta");
  requireSameShape(k.in[0], k.out, "operand 'x' and result");
}

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
void prepareLayerNormGrad(KernelInstance &k) {
  prepareRows(k, k.in[0], "x");
  requireVector(k.in[1], k.inner, "gamma");
  requireSameShape(k.in[0], k.in[2], "operands 'x' and 'dy'");
  requireSameShape(k.in[0], k.out, "operand 'x' and result");
}

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
  prepareRows(k, k.in[0], "x");
  requireSameShape(k.in[0], k.in[1], "operands 'x' and 'dy'");
  if (k.out.rank() != 1 || k.out.shape[0] != k.inner)
    throw RuleError("result must be f32[" + std::to_string(k.inner) + "], got " +
                    plan::shapeText(k.out.shape));
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

} // namespace

namespace kernels::Norm {
const CpuKernel LayerNorm{prepareLayerNorm, runLayerNorm, 3, 3};
const CpuKernel LayerNormGrad{prepareLayerNormGrad, runLayerNormGrad, 3, 3};
const CpuKernel LayerNormGammaGrad{prepareGammaGrad, runGammaGrad, 2, 2};
} // namespace kernels::Norm

} // namespace mpc::runtime::cpu
