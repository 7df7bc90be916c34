//===- runtime/cuda/kernels/Norm.cpp - layer_norm and its gradients ---------===//
//
// layer_norm normalises the last axis: x f32[..., D] seen as [rows, D], with
// gamma and beta f32[D]. Its backward ops recompute the row statistics from
// x (the forward op keeps none), onto the launchers of Norm.cu.
//
// batch_norm normalises per channel, x seen as [outer, C, inner] around its
// `axis`; with operands running_mean and running_var (C each) it uses those
// instead of the batch's statistics, and so do its backward ops.
// batch_norm_update folds the batch statistics into the running ones in place.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

namespace mpc::runtime::cuda {

namespace {

/// x f32 of rank >= 1 as [rows, D], D its last axis.
struct Rows {
  int64_t rows = 0, d = 0;
};
Rows rowsOf(const plan::Buffer *x) {
  requireF32(x);
  if (x->shape.empty()) throw RuleError("layer_norm needs x of rank >= 1");
  Rows r;
  r.d = x->shape.back();
  r.rows = r.d == 0 ? 0 : x->numElements() / r.d;
  return r;
}

/// A parameter of the normalised axis: f32[D].
void requireParam(const plan::Buffer *p, int64_t d) {
  requireF32(p);
  if (p->shape != std::vector<int64_t>{d})
    throw RuleError("buffer '" + p->name + "' must be f32[" + std::to_string(d) +
                    "] (the last axis of x)");
}

void requireSameShape(const plan::Buffer *a, const plan::Buffer *b) {
  requireF32(b);
  if (a->shape != b->shape)
    throw RuleError("buffers '" + a->name + "' and '" + b->name + "' differ in shape");
}

double epsOf(const KernelOperands &k) { return attrFloat(k.instr->attrs, "eps"); }

Launch prepareLayerNorm(const KernelOperands &k) {
  requireArity(k, 3, 3);
  Rows r = rowsOf(k.inputs[0]);
  requireParam(k.inputs[1], r.d);
  requireParam(k.inputs[2], r.d);
  requireSameShape(k.inputs[0], k.output);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *beta = cf(k.inPtr[2]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchLayerNorm(x, gamma, beta, y, r.rows, r.d, eps, s); };
}

Launch prepareLayerNormGrad(const KernelOperands &k) {
  requireArity(k, 3, 3);
  Rows r = rowsOf(k.inputs[0]);
  requireParam(k.inputs[1], r.d);
  requireSameShape(k.inputs[0], k.inputs[2]);
  requireSameShape(k.inputs[0], k.output);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *dy = cf(k.inPtr[2]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchLayerNormGrad(x, gamma, dy, dx, r.rows, r.d, eps, s); };
}

int64_t gammaGradScratch(const KernelOperands &k) {
  requireArity(k, 2, 2);
  Rows r = rowsOf(k.inputs[0]);
  return layerNormGammaGradScratchFloats(r.rows, r.d);
}

Launch prepareLayerNormGammaGrad(const KernelOperands &k) {
  requireArity(k, 2, 2);
  Rows r = rowsOf(k.inputs[0]);
  requireSameShape(k.inputs[0], k.inputs[1]);
  requireParam(k.output, r.d);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dgamma = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchLayerNormGammaGrad(x, dy, dgamma, r.rows, r.d, eps, ctx.scratch, ctx.stream);
  };
}

// --- batch_norm ---------------------------------------------------------

/// x f32 of rank >= 2 split around its channel axis (attribute `axis`).
ChannelShape channelsOf(const KernelOperands &k, const plan::Buffer *x) {
  requireF32(x);
  int64_t rank = int64_t(x->shape.size());
  if (rank < 2) throw RuleError("batch_norm needs x of rank >= 2");
  int64_t axis = attrInt(k.instr->attrs, "axis");
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw RuleError("axis " + std::to_string(axis) + " out of range for buffer '" + x->name +
                    "'");
  ChannelShape s;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < a) s.outer *= x->shape[size_t(i)];
    else if (i == a) s.c = x->shape[size_t(i)];
    else s.inner *= x->shape[size_t(i)];
  }
  return s;
}

/// A per-channel vector: f32[C].
void requireChannelVector(const plan::Buffer *p, int64_t c) {
  requireF32(p);
  if (p->shape != std::vector<int64_t>{c})
    throw RuleError("buffer '" + p->name + "' must be f32[" + std::to_string(c) +
                    "] (x's channel axis)");
}

/// Running mean and variance at operands first, first + 1, or nulls.
std::pair<const float *, const float *> runningOf(const KernelOperands &k, size_t first,
                                                  int64_t c) {
  if (k.inputs.size() == first + 1)
    throw RuleError("operands 'running_mean' and 'running_var' come together");
  if (k.inputs.size() != first + 2) return {nullptr, nullptr};
  requireChannelVector(k.inputs[first], c);
  requireChannelVector(k.inputs[first + 1], c);
  return {cf(k.inPtr[first]), cf(k.inPtr[first + 1])};
}

Launch prepareBatchNorm(const KernelOperands &k) {
  requireArity(k, 3, 5);
  ChannelShape cs = channelsOf(k, k.inputs[0]);
  requireChannelVector(k.inputs[1], cs.c);
  requireChannelVector(k.inputs[2], cs.c);
  auto [rm, rv] = runningOf(k, 3, cs.c);
  requireSameShape(k.inputs[0], k.output);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *beta = cf(k.inPtr[2]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNorm(x, gamma, beta, rm, rv, y, cs, eps, s); };
}

Launch prepareBatchNormGrad(const KernelOperands &k) {
  requireArity(k, 3, 5);
  ChannelShape cs = channelsOf(k, k.inputs[0]);
  requireChannelVector(k.inputs[1], cs.c);
  requireSameShape(k.inputs[0], k.inputs[2]);
  auto [rm, rv] = runningOf(k, 3, cs.c);
  requireSameShape(k.inputs[0], k.output);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *gamma = cf(k.inPtr[1]), *dy = cf(k.inPtr[2]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNormGrad(x, gamma, dy, rm, rv, dx, cs, eps, s); };
}

Launch prepareBatchNormGammaGrad(const KernelOperands &k) {
  requireArity(k, 2, 4);
  ChannelShape cs = channelsOf(k, k.inputs[0]);
  requireSameShape(k.inputs[0], k.inputs[1]);
  auto [rm, rv] = runningOf(k, 2, cs.c);
  requireChannelVector(k.output, cs.c);
  double eps = epsOf(k);
  const float *x = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dgamma = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBatchNormGammaGrad(x, dy, rm, rv, dgamma, cs, eps, s); };
}

Launch prepareBatchNormUpdate(const KernelOperands &k) {
  requireArity(k, 3, 3);
  ChannelShape cs = channelsOf(k, k.inputs[2]);
  requireChannelVector(k.inputs[0], cs.c);
  requireChannelVector(k.inputs[1], cs.c);
  requireChannelVector(k.output, cs.c);
  double momentum = attrFloat(k.instr->attrs, "momentum");
  if (!(momentum >= 0 && momentum <= 1))
    throw RuleError("momentum must be in [0, 1], got " + std::to_string(momentum));
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
