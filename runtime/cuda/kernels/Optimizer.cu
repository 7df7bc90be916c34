//===- runtime/cuda/kernels/Optimizer.cu - sgd_update and adam_update ---===//
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
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

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

} // namespace

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

} // namespace mpc::runtime::cuda
