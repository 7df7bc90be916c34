//===- runtime/cuda/kernels/Optimizer.cu - parameter updates --------------===//
//
// In-place parameter updates with torch.optim semantics, identical in
// definition to the reference kernels in ir/ops/Optimizer.cpp:
//   SGD:  g = grad + wd * p; with momentum, buf = g on the first step (step
//         counter 0) else momentum * buf + (1 - dampening) * g, and
//         g = nesterov ? g + momentum * buf : buf; p -= lr * g; step += 1.
//   Adam: step += 1; bias corrections from the new step in float64; with
//         decoupled weight decay (AdamW) p *= 1 - lr * wd, else g += wd * p;
//         m, v moments; p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
// The step counter lives in device memory (f32[1]); the host never reads it.
// Each block's thread 0 derives the bias corrections once into shared memory.
// Elements are computed in float64 and stored as float32, like the CPU
// runtime's kernels.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/CudaCheck.h"

#include <cmath>
#include <utility>
#include <vector>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

/// Optimizer updates compute each element in float64 and store float32,
/// like the CPU runtime's kernels, so both runtimes agree to the last bits
/// or nearly.
/// torch.optim.SGD on n elements in place; momentumBuf and step may be null
/// (no momentum). `step` (f32[1]) is 0 on the first step and is incremented
/// after the update by a second, single-thread kernel.
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
};

/// torch.optim.Adam / AdamW (decoupled) in place; `step` is incremented first
/// (a single-thread kernel) and read by the update.
struct AdamHyper {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
  bool decoupled = false;
};

// ---- device kernels and their launchers --------------------------------------

/// A guarded update (fp16 loss scaling) reads its skip flag on the device:
/// non-zero, and no kernel of the update changes anything.
__device__ inline bool skipping(const float *skip) { return skip != nullptr && skip[0] != 0.f; }

__global__ void incrementKernel(float *step, const float *skip) {
  if (!skipping(skip)) step[0] += 1.f;
}

__global__ void sgdKernel(float *__restrict__ p, const float *__restrict__ grad,
                          float *__restrict__ buf, const float *__restrict__ step, int64_t n,
                          SgdHyper h, const float *skip) {
  if (skipping(skip)) return;
  bool first = step != nullptr && step[0] == 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double g = double(grad[i]) + h.weightDecay * double(p[i]);
    if (h.momentum != 0.0) {
      double b = first ? g : h.momentum * double(buf[i]) + (1.0 - h.dampening) * g;
      buf[i] = float(b);
      g = h.nesterov ? g + h.momentum * double(buf[i]) : double(buf[i]);
    }
    p[i] = float(double(p[i]) - h.lr * g);
  }
}

__global__ void adamKernel(float *__restrict__ p, const float *__restrict__ grad,
                           float *__restrict__ m, float *__restrict__ v,
                           const float *__restrict__ step, int64_t n, AdamHyper h,
                           const float *skip) {
  if (skipping(skip)) return;
  __shared__ double stepSize, bc2Sqrt;
  if (threadIdx.x == 0) {
    double t = step[0];
    double bc1 = 1.0 - pow(h.beta1, t), bc2 = 1.0 - pow(h.beta2, t);
    stepSize = h.lr / bc1;
    bc2Sqrt = sqrt(bc2);
  }
  __syncthreads();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double g = grad[i], pi = p[i];
    if (h.decoupled) pi *= 1.0 - h.lr * h.weightDecay;
    else g += h.weightDecay * pi;
    double mi = h.beta1 * double(m[i]) + (1.0 - h.beta1) * g;
    double vi = h.beta2 * double(v[i]) + (1.0 - h.beta2) * g * g;
    m[i] = float(mi);
    v[i] = float(vi);
    p[i] = float(pi - stepSize * mi / (sqrt(vi) / bc2Sqrt + h.eps));
  }
}

void launchSgdUpdate(float *param, const float *grad, float *momentumBuf, float *step, int64_t n,
                     const SgdHyper &h, const float *skip, cudaStream_t stream) {
  if (n > 0)
    sgdKernel<<<gridFor(n), kThreads, 0, stream>>>(param, grad, momentumBuf, step, n, h, skip);
  if (step) incrementKernel<<<1, 1, 0, stream>>>(step, skip);
}

void launchAdamUpdate(float *param, const float *grad, float *m, float *v, float *step, int64_t n,
                      const AdamHyper &h, const float *skip, cudaStream_t stream) {
  incrementKernel<<<1, 1, 0, stream>>>(step, skip);
  if (n > 0) adamKernel<<<gridFor(n), kThreads, 0, stream>>>(param, grad, m, v, step, n, h, skip);
}

__global__ void countNonfiniteKernel(const float *x, int64_t n, float *count) {
  // Each thread adds whole numbers: exact, so the order of the atomics does
  // not matter (below 2^24 per operand and in all).
  float local = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    local += isfinite(x[i]) ? 0.f : 1.f;
  if (local != 0.f) atomicAdd(count, local);
}

__global__ void lossScaleUpdateKernel(float *scale, float *good, float *skips, const float *found,
                                      float *out, double interval, double growth, double backoff) {
  if (found[0] != 0.f) {
    scale[0] = float(double(scale[0]) * backoff);
    good[0] = 0.f;
    skips[0] += 1.f;
  } else if ((good[0] += 1.f) >= float(interval)) {
    scale[0] = float(double(scale[0]) * growth);
    good[0] = 0.f;
  }
  out[0] = scale[0];
}

// ---- host side: at load, the launch of every step ---------------------------

/// Copies the updated parameter into the op's result when the plan gave the
/// result its own buffer.
void copyResult(const KernelOperands &k, cudaStream_t s) {
  if (k.outPtr != k.inPtr[0] && k.output->bytes)
    cudaCheck(cudaMemcpyAsync(k.outPtr, k.inPtr[0], k.output->bytes, cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync");
}

Launch prepareSgd(const KernelOperands &k) {
  SgdHyper h;
  h.lr = attrFloat(k.instr->attrs, "lr");
  h.momentum = attrFloat(k.instr->attrs, "momentum");
  h.dampening = attrFloat(k.instr->attrs, "dampening");
  h.weightDecay = attrFloat(k.instr->attrs, "weight_decay");
  h.nesterov = attrBool(k.instr->attrs, "nesterov");
  // momentum_buf and step come together, and with any momentum: proven by the
  // plan verifier.
  const bool guarded = attrBool(k.instr->attrs, "guarded");
  const float *skip = guarded ? cf(k.inPtr.back()) : nullptr;
  bool state = k.inputs.size() - (guarded ? 1 : 0) == 4;
  float *p = f(k.inPtr[0]), *buf = state ? f(k.inPtr[2]) : nullptr;
  float *step = state ? f(k.inPtr[3]) : nullptr;
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchSgdUpdate(p, g, buf, step, n, h, skip, s);
    copyResult(copy, s);
  };
}

Launch prepareAdam(const KernelOperands &k) {
  AdamHyper h;
  h.lr = attrFloat(k.instr->attrs, "lr");
  h.beta1 = attrFloat(k.instr->attrs, "beta1");
  h.beta2 = attrFloat(k.instr->attrs, "beta2");
  h.eps = attrFloat(k.instr->attrs, "eps");
  h.weightDecay = attrFloat(k.instr->attrs, "weight_decay");
  h.decoupled = attrBool(k.instr->attrs, "decoupled");
  float *p = f(k.inPtr[0]), *m = f(k.inPtr[2]), *v = f(k.inPtr[3]), *step = f(k.inPtr[4]);
  const float *skip = attrBool(k.instr->attrs, "guarded") ? cf(k.inPtr[5]) : nullptr;
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchAdamUpdate(p, g, m, v, step, n, h, skip, s);
    copyResult(copy, s);
  };
}

/// assign: the value into the target, then the target into the result when
/// the plan gave the result its own buffer.
Launch prepareAssign(const KernelOperands &k) {
  void *target = k.inPtr[0];
  const void *value = k.inPtr[1];
  size_t bytes = k.inputs[0]->bytes;
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    if (bytes && target != value)
      cudaCheck(cudaMemcpyAsync(target, value, bytes, cudaMemcpyDeviceToDevice, s),
                "cudaMemcpyAsync");
    copyResult(copy, s);
  };
}

/// count_nonfinite: the count starts at zero in the result, then each
/// operand adds its own.
Launch prepareCountNonfinite(const KernelOperands &k) {
  std::vector<std::pair<const float *, int64_t>> xs;
  for (size_t i = 0; i < k.inputs.size(); ++i) xs.push_back({cf(k.inPtr[i]), k.inputs[i]->numElements()});
  float *out = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] {
    cudaCheck(cudaMemsetAsync(out, 0, sizeof(float), s), "cudaMemsetAsync");
    for (const auto &[x, n] : xs)
      if (n > 0) countNonfiniteKernel<<<gridFor(n), kThreads, 0, s>>>(x, n, out);
  };
}

Launch prepareLossScaleUpdate(const KernelOperands &k) {
  float *scale = f(k.inPtr[0]), *good = f(k.inPtr[1]), *skips = f(k.inPtr[2]);
  const float *found = cf(k.inPtr[3]);
  float *out = f(k.outPtr);
  double interval = double(attrInt(k.instr->attrs, "growth_interval"));
  double growth = attrFloat(k.instr->attrs, "growth_factor");
  double backoff = attrFloat(k.instr->attrs, "backoff_factor");
  cudaStream_t s = k.ctx.stream;
  return [=] {
    lossScaleUpdateKernel<<<1, 1, 0, s>>>(scale, good, skips, found, out, interval, growth, backoff);
  };
}

} // namespace

namespace kernels::Optimizer {
const CudaKernel CountNonfinite{nullptr, prepareCountNonfinite};
const CudaKernel LossScaleUpdate{nullptr, prepareLossScaleUpdate};
const CudaKernel SgdUpdate{nullptr, prepareSgd};
const CudaKernel AdamUpdate{nullptr, prepareAdam};
const CudaKernel Assign{nullptr, prepareAssign};
} // namespace kernels::Optimizer

} // namespace mpc::runtime::cuda
