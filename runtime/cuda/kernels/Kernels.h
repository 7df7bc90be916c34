//===- runtime/cuda/kernels/Kernels.h - CUDA kernel launchers -----------===//
//
// The device side of the CUDA backend: one launcher per kernel family,
// callable from host C++ (runtime/cuda/kernels/CudaKernels.cpp resolves plan
// instructions onto them once, at load). Every launcher is asynchronous on the
// given stream, allocates nothing and never synchronises the host; shapes and
// strides arrive precomputed in small by-value descriptors.
//
// This header is compiled by nvcc (C++17) and by the host compiler (C++20),
// so it uses only C++17 and the CUDA runtime types.
//
// Reductions are deterministic: each uses a fixed partition of the reduced
// elements that depends only on the shape (never on timing or atomics) and
// combines partial sums in a fixed binary tree, so a plan gives bit-identical
// results run after run on the same GPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mpc::runtime::cuda {

/// Largest rank a strided descriptor holds (after merging contiguous dims).
constexpr int kMaxRank = 8;

/// An output iteration space `dims` (row-major) and, for up to two operands,
/// the element stride of each output dim in that operand (0 for a broadcast
/// dim). Built by makeStrided* on the host.
struct StridedDesc {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strideA[kMaxRank] = {};
  int64_t strideB[kMaxRank] = {};
  int64_t count = 1; ///< product of dims
};

/// Bad data found on the device: an index (a cross-entropy label, an
/// embedding id) outside its range [0, bound). A kernel cannot throw, so it
/// records the finding here and carries on with a harmless result; the host
/// reads the record when it next waits for the device and throws a UserError
/// naming the device, the instruction, the step, the position and the value.
/// Device memory, zeroed at load and never reset: the first finding is the
/// one reported, and the run stops there.
struct DataError {
  /// 0, or (step << 32) | (1 + instruction) of the first instruction to find
  /// bad data: later instructions, and the same one in a later step, leave
  /// the record alone.
  unsigned long long where;
  /// ~((position << 32) | uint32_t(value)) for the smallest bad position that
  /// instruction found (an atomicMax of the complement, so the zeroed record
  /// means none; positions from 2^32 - 1 on share the last slot).
  unsigned long long what;
  /// The bound of the valid range of the first finding.
  long long bound;
  /// The step being run, counted from 1 since load (launchBeginStep).
  long long step;
};
/// What a launcher reports bad data to: the record and its instruction.
struct DataErrorSink {
  DataError *record = nullptr;
  int instr = 0;
};
/// Sets record->step = step, in stream order before the step's kernels.
void launchBeginStep(DataError *record, int64_t step, cudaStream_t stream);

/// y[i] = x[offsetA(i)] over `d`: transpose and broadcast_to. Works on 4-byte
/// elements of either dtype.
void launchGather(const uint32_t *x, uint32_t *y, const StridedDesc &d, cudaStream_t stream);
/// y[0..n) = value.
void launchFill(float *y, int64_t n, float value, cudaStream_t stream);
/// Strided block copy of 4-byte elements (either dtype): for o in [0, outer),
/// dst[o * dstStride + j] = src[o * srcStride + j] for j in [0, row). slice
/// (one copy) and concat (one copy per operand).
void launchBlockCopy(const uint32_t *src, uint32_t *dst, int64_t outer, int64_t row,
                     int64_t srcStride, int64_t dstStride, cudaStream_t stream);

/// A reduction: every output element (iteration space `out`, its input
/// offsets in out.strideA) sums the input elements of the space `red` (input
/// offsets in red.strideA). `innerReduced` selects the memory-friendly
/// variant: true when the input's last dimension is among the reduced ones.
struct ReduceDesc {
  StridedDesc out;
  StridedDesc red;
  bool innerReduced = false;
};
/// y[o] = scale * sum_r x[o, r]. `scratch` must hold reduceScratchFloats(d)
/// floats (used by the split path of large reductions to few outputs).
void launchReduceSum(const float *x, float *y, const ReduceDesc &d, float scale, float *scratch,
                     cudaStream_t stream);
int64_t reduceScratchFloats(const ReduceDesc &d);

/// Full reduction of n elements to y[0] = scale * sum_i f(a[i], b[i]), f
/// being a (b null) or (a - b)^2 (b given). Two fixed stages through
/// `scratch` (allReduceScratchFloats(n) floats).
void launchReduceAll(const float *a, const float *b, float *y, int64_t n, float scale,
                     float *scratch, cudaStream_t stream);
int64_t allReduceScratchFloats(int64_t n);

/// Softmax family along one axis, the tensor seen as [outer, size, inner].
enum class SoftmaxKind : int { Softmax, LogSoftmax };
void launchSoftmax(SoftmaxKind kind, const float *x, float *y, int64_t outer, int64_t size,
                   int64_t inner, cudaStream_t stream);
/// dx = y * (dy - sum_axis(dy * y)).
void launchSoftmaxGrad(const float *y, const float *dy, float *dx, int64_t outer, int64_t size,
                       int64_t inner, cudaStream_t stream);

/// y = x with y[m, i, j] = value where j > i, x seen as [mats, rows, cols]
/// (causal_mask). y may be x (then only the masked entries are written).
void launchCausalMask(const float *x, float *y, int64_t mats, int64_t rows, int64_t cols,
                      float value, cudaStream_t stream);

/// loss[0] = sum over counted rows n of (logsumexp(logits[n,:]) -
/// logits[n, labels[n]]) / (counted rows), a row being counted when its label
/// is not `ignoreIndex` (no row counted: NaN); with `sum` (reduction "sum")
/// not divided (no row counted: 0). A counted label outside [0, C)
/// is reported to `err` and makes the loss NaN. `scratch` holds
/// crossEntropyScratchFloats(rows) floats.
void launchSoftmaxCrossEntropy(const float *logits, const int32_t *labels, float *loss,
                               int64_t rows, int64_t classes, int64_t ignoreIndex, bool sum,
                               float *scratch, DataErrorSink err, cudaStream_t stream);
int64_t crossEntropyScratchFloats(int64_t rows);
/// dlogits = dy[0] * (softmax(logits) - onehot(labels)) / (counted rows) (not
/// divided with `sum`), 0 on
/// the rows labelled `ignoreIndex`; a bad label gives a NaN row (and is
/// reported). `scratch` holds crossEntropyGradScratchFloats(rows) floats (the
/// count of counted rows, found by a fixed two-stage integer sum).
void launchSoftmaxCrossEntropyGrad(const float *logits, const int32_t *labels, const float *dy,
                                   float *dlogits, int64_t rows, int64_t classes,
                                   int64_t ignoreIndex, bool sum, float *scratch,
                                   DataErrorSink err, cudaStream_t stream);
int64_t crossEntropyGradScratchFloats(int64_t rows);

/// layer_norm over rows of `d` elements, statistics in float64 (biased
/// variance): y = (x - mean) / sqrt(var + eps) * gamma + beta.
void launchLayerNorm(const float *x, const float *gamma, const float *beta, float *y,
                     int64_t rows, int64_t d, double eps, cudaStream_t stream);
/// dx of layer_norm: rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
void launchLayerNormGrad(const float *x, const float *gamma, const float *dy, float *dx,
                         int64_t rows, int64_t d, double eps, cudaStream_t stream);
/// dgamma[j] = sum over rows r of dy[r, j] * xhat[r, j]: the row statistics
/// into scratch, then a fixed split of the rows per column, then the partial
/// sums of each column in order. `scratch` holds layerNormGammaGradScratchFloats.
void launchLayerNormGammaGrad(const float *x, const float *dy, float *dgamma, int64_t rows,
                              int64_t d, double eps, float *scratch, cudaStream_t stream);
int64_t layerNormGammaGradScratchFloats(int64_t rows, int64_t d);

/// batch_norm and its gradients over x seen as [outer, c, inner] (c the
/// channels): one block per channel, statistics and sums in float64 over a
/// fixed tree. `runMean`/`runVar` null: the channel's batch statistics
/// (biased variance), else those running statistics.
struct ChannelShape {
  int64_t outer = 1, c = 1, inner = 1;
};
/// y = (x - mean) * rstd * gamma + beta per channel.
void launchBatchNorm(const float *x, const float *gamma, const float *beta, const float *runMean,
                     const float *runVar, float *y, ChannelShape s, double eps,
                     cudaStream_t stream);
/// dx: with batch statistics rstd * (g - mean(g) - xhat * mean(g * xhat)),
/// g = dy * gamma; with running ones dy * gamma * rstd.
void launchBatchNormGrad(const float *x, const float *gamma, const float *dy,
                         const float *runMean, const float *runVar, float *dx, ChannelShape s,
                         double eps, cudaStream_t stream);
/// dgamma[c] = sum over channel c of dy * xhat.
void launchBatchNormGammaGrad(const float *x, const float *dy, const float *runMean,
                              const float *runVar, float *dgamma, ChannelShape s, double eps,
                              cudaStream_t stream);
/// running = momentum * running + (1 - momentum) * batch statistic, in place
/// (mean, biased variance); `out` (the result) gets the new running mean
/// unless it is `runMean` itself.
void launchBatchNormUpdate(float *runMean, float *runVar, const float *x, float *out,
                           ChannelShape s, double momentum, cudaStream_t stream);

/// out[n, :] = table[ids[n], :] for n in [0, n); an id outside [0, vocab) is
/// reported to `err` and gives a zero row.
void launchEmbedding(const int32_t *ids, const float *table, float *out, int64_t n,
                     int64_t vocab, int64_t d, DataErrorSink err, cudaStream_t stream);
/// out[v, :] = sum of dy[n, :] over the positions n with ids[n] == v, in
/// increasing n (zero when there is none); ids outside [0, vocab) are
/// reported and skipped. The positions are sorted by id with a stable radix
/// sort in `scratch` (embeddingGradScratchFloats floats), then one block per
/// row of the result sums its positions in order.
void launchEmbeddingGrad(const int32_t *ids, const float *dy, float *out, int64_t n,
                         int64_t vocab, int64_t d, float *scratch, DataErrorSink err,
                         cudaStream_t stream);
int64_t embeddingGradScratchFloats(int64_t n, int64_t vocab);

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
void launchSgdUpdate(float *param, const float *grad, float *momentumBuf, float *step, int64_t n,
                     const SgdHyper &h, cudaStream_t stream);
/// torch.optim.Adam / AdamW (decoupled) in place; `step` is incremented first
/// (a single-thread kernel) and read by the update.
struct AdamHyper {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
  bool decoupled = false;
};
void launchAdamUpdate(float *param, const float *grad, float *m, float *v, float *step, int64_t n,
                      const AdamHyper &h, cudaStream_t stream);

/// Convolution of one image: input [c, h, w], a kh x kw kernel with stride,
/// padding and dilation, output oh x ow (runtime/Windows.h's ConvDims).
struct ConvDesc {
  int64_t c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
};
/// cols [c*kh*kw, oh*ow]: row (ch, ky, kx), column (oy, ox) holds the input
/// element that tap reads, 0 in the padding.
void launchIm2col(const float *x, float *cols, const ConvDesc &d, cudaStream_t stream);
/// dx [c, h, w] = im2col's adjoint of cols: each input element sums the
/// column entries read from it, in (ky, kx) order (no atomics).
void launchCol2im(const float *cols, float *dx, const ConvDesc &d, cudaStream_t stream);
/// y [n, o, plane] += b[o].
void launchAddChannelBias(float *y, const float *b, int64_t n, int64_t o, int64_t plane,
                          cudaStream_t stream);

/// Pooling over `planes` (n * c) planes of h x w to oh x ow (runtime/Windows.h's
/// PoolDims). Windows as the CPU: max keeps the first maximum (rows, then
/// columns); the gradients gather, each input element adding the windows
/// that reach it in output order, so results are the CPU's bit for bit.
struct PoolDesc {
  int64_t planes, h, w, kh, kw, sh, sw, ph, pw, oh, ow;
  bool countPad;
};
void launchMaxPool2d(const float *x, float *y, const PoolDesc &d, cudaStream_t stream);
void launchMaxPool2dGrad(const float *x, const float *dy, float *dx, const PoolDesc &d,
                         cudaStream_t stream);
void launchAvgPool2d(const float *x, float *y, const PoolDesc &d, cudaStream_t stream);
void launchAvgPool2dGrad(const float *dy, float *dx, const PoolDesc &d, cudaStream_t stream);
/// y[p] = mean of the `plane` elements of plane p, summed in order in float64.
void launchGlobalAvgPool2d(const float *x, float *y, int64_t planes, int64_t plane,
                           cudaStream_t stream);

} // namespace mpc::runtime::cuda
