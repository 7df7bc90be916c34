//===- runtime/cpu/kernels/Loss.cpp - mse_loss, softmax_cross_entropy ---===//
//
// Losses are means (torch's default reduction) accumulated in double;
// softmax_cross_entropy may sum instead (reduction "sum"). The
// cross-entropy kernels check every label against [0, C) each step and
// throw; the device turns that into a UserError naming the instruction and
// the executor stops every device.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>

namespace mpc::runtime::cpu {

namespace {

void runMse(const KernelInstance &k) {
  const float *p = k.in[0].f(), *t = k.in[1].f();
  double s = 0;
  for (int64_t i = 0; i < k.in[0].numel; ++i) {
    double d = double(p[i]) - double(t[i]);
    s += d * d;
  }
  k.out.f()[0] = float(s / double(k.in[0].numel));
}

// outer = rows (every axis but the last), axis = classes C, ints[0] =
// ignore_index, ints[1] = 1 for reduction "sum" (0: "mean").
void prepareCrossEntropy(KernelInstance &k) {
  const TensorArg &logits = k.in[0], &labels = k.in[1];
  k.axis = logits.shape.back();
  k.outer = labels.numel;
  k.ints = {attrInt(k.attrMap(), "ignore_index"),
            attrString(k.attrMap(), "reduction") == "sum" ? 1 : 0};
}

bool sums(const KernelInstance &k) { return k.ints[1] != 0; }

bool ignored(const KernelInstance &k, int64_t row) { return k.in[1].i()[row] == k.ints[0]; }

int64_t checkedLabel(const KernelInstance &k, int64_t row) {
  int32_t v = k.in[1].i()[row];
  if (v < 0 || v >= k.axis)
    throw RuleError("label " + std::to_string(v) + " out of range [0, " +
                    std::to_string(k.axis) + ") at row " + std::to_string(row));
  return v;
}

/// Rows whose label is not ignore_index: the mean's divisor.
int64_t countedRows(const KernelInstance &k) {
  int64_t counted = 0;
  for (int64_t n = 0; n < k.outer; ++n) counted += ignored(k, n) ? 0 : 1;
  return counted;
}

/// log-sum-exp of one row, in double.
double logSumExp(const float *x, int64_t c) {
  double mx = *std::max_element(x, x + c);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(double(x[j]) - mx);
  return mx + std::log(sum);
}

/// Every row ignored gives 0 / 0: NaN for the mean, 0 for the sum, as in
/// PyTorch.
void runCrossEntropy(const KernelInstance &k) {
  const float *x = k.in[0].f();
  int64_t c = k.axis, counted = 0;
  double s = 0;
  for (int64_t n = 0; n < k.outer; ++n) {
    if (ignored(k, n)) continue;
    int64_t label = checkedLabel(k, n);
    const float *row = x + n * c;
    s -= double(row[label]) - logSumExp(row, c);
    ++counted;
  }
  k.out.f()[0] = float(sums(k) ? s : s / double(counted));
}

/// Ignored rows get zero; every row ignored: all zero.
void runCrossEntropyGrad(const KernelInstance &k) {
  const float *x = k.in[0].f();
  float *o = k.out.f();
  int64_t c = k.axis, counted = countedRows(k);
  double dy = double(k.in[2].f()[0]);
  double g = sums(k) ? dy : counted ? dy / double(counted) : 0.0;
  for (int64_t n = 0; n < k.outer; ++n) {
    if (ignored(k, n)) {
      std::fill(o + n * c, o + (n + 1) * c, 0.f);
      continue;
    }
    int64_t label = checkedLabel(k, n);
    const float *row = x + n * c;
    double lse = logSumExp(row, c);
    for (int64_t j = 0; j < c; ++j)
      o[n * c + j] = float(g * (std::exp(double(row[j]) - lse) - (j == label ? 1.0 : 0.0)));
  }
}

} // namespace

namespace kernels::Loss {
const CpuKernel MseLoss{nullptr, runMse};
const CpuKernel SoftmaxCrossEntropy{prepareCrossEntropy, runCrossEntropy};
const CpuKernel SoftmaxCrossEntropyGrad{prepareCrossEntropy, runCrossEntropyGrad};
} // namespace kernels::Loss

} // namespace mpc::runtime::cpu
