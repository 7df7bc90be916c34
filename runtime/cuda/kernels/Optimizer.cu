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

__global__ void incrementKernel(float *step) { step[0] += 1.f; }

__global__ void sgdKernel(float *__restrict__ p, const float *__restrict__ grad,
                          float *__restrict__ buf, const float *__restrict__ step, int64_t n,
                          SgdHyper h) {
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
                           const float *__restrict__ step, int64_t n, AdamHyper h) {
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
                     const SgdHyper &h, cudaStream_t stream) {
  if (n > 0) sgdKernel<<<gridFor(n), kThreads, 0, stream>>>(param, grad, momentumBuf, step, n, h);
  if (step) incrementKernel<<<1, 1, 0, stream>>>(step);
}

void launchAdamUpdate(float *param, const float *grad, float *m, float *v, float *step, int64_t n,
                      const AdamHyper &h, cudaStream_t stream) {
  incrementKernel<<<1, 1, 0, stream>>>(step);
  if (n > 0) adamKernel<<<gridFor(n), kThreads, 0, stream>>>(param, grad, m, v, step, n, h);
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
  bool state = k.inputs.size() == 4;
  float *p = f(k.inPtr[0]), *buf = state ? f(k.inPtr[2]) : nullptr;
  float *step = state ? f(k.inPtr[3]) : nullptr;
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchSgdUpdate(p, g, buf, step, n, h, s);
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
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchAdamUpdate(p, g, m, v, step, n, h, s);
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

} // namespace

namespace kernels::Optimizer {
const CudaKernel SgdUpdate{nullptr, prepareSgd};
const CudaKernel AdamUpdate{nullptr, prepareAdam};
const CudaKernel Assign{nullptr, prepareAssign};
} // namespace kernels::Optimizer

} // namespace mpc::runtime::cuda
