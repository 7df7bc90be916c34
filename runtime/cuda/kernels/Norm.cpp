//===- runtime/cuda/kernels/Norm.cpp - layer_norm and its gradients ---------===//
//
// layer_norm normalises the last axis: x f32[..., D] seen as [rows, D], with
// gamma and beta f32[D]. Its backward ops recompute the row statistics from
// x (the forward op keeps none), onto the launchers of Norm.cu.
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

double epsOf(const KernelOperands &k) { return attrFloat(k.instr->attrs, "eps", 1e-5); }

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

} // namespace

namespace kernels::Norm {
const CudaKernel LayerNorm{nullptr, prepareLayerNorm};
const CudaKernel LayerNormGrad{nullptr, prepareLayerNormGrad};
const CudaKernel LayerNormGammaGrad{gammaGradScratch, prepareLayerNormGammaGrad};
} // namespace kernels::Norm

} // namespace mpc::runtime::cuda
