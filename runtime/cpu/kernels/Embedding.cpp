//===- runtime/cpu/kernels/Embedding.cpp - embedding and its gradient ---===//
//
// embedding gathers table rows by id; embedding_grad adds dy's rows back
// into a zeroed [V, D] table in position order, so repeated ids sum in a
// fixed order and results are bit-identical run after run. An id outside
// [0, V) is bad data: the kernel throws, naming the id and its position,
// and the device adds the instruction and step.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

#include <algorithm>
#include <cstring>

namespace mpc::runtime::cpu {

namespace {

/// ids[n] checked against [0, V) (V = k.axis); the message is worded as the
/// reference kernel and the CUDA runtime word it.
int64_t checkedId(const KernelInstance &k, int64_t n) {
  const int32_t id = k.in[0].i()[n];
  if (id < 0 || id >= k.axis)
    throw RuleError("embedding id " + std::to_string(id) + " at ids" +
                    plan::shapeText(unravelIndex(n, k.in[0].shape)) + " out of range [0, " +
                    std::to_string(k.axis) + ")");
  return id;
}

// embedding(ids, table): axis = V, inner = D, outer = number of ids.
void prepareEmbedding(KernelInstance &k) {
  const TensorArg &table = k.in[1];
  k.axis = table.shape[0];
  k.inner = table.shape[1];
  k.outer = k.in[0].numel;
}

void runEmbedding(const KernelInstance &k) {
  const int64_t d = k.inner;
  const float *table = k.in[1].f();
  float *out = k.out.f();
  if (d == 0) return;
  for (int64_t n = 0; n < k.outer; ++n)
    std::memcpy(out + n * d, table + checkedId(k, n) * d, size_t(d) * 4);
}

// embedding_grad(ids, dy) {num_embeddings = V} -> f32[V, D].
void prepareEmbeddingGrad(KernelInstance &k) {
  k.axis = attrInt(k.attrMap(), "num_embeddings");
  k.inner = k.out.shape[1];
  k.outer = k.in[0].numel;
}

void runEmbeddingGrad(const KernelInstance &k) {
  const int64_t d = k.inner;
  const float *dy = k.in[1].f();
  float *out = k.out.f();
  std::fill(out, out + k.out.numel, 0.f);
  for (int64_t n = 0; n < k.outer; ++n) {
    float *row = out + checkedId(k, n) * d;
    const float *g = dy + n * d;
    for (int64_t j = 0; j < d; ++j) row[j] += g[j];
  }
}

} // namespace

namespace kernels::Embedding {
const CpuKernel Embedding{prepareEmbedding, runEmbedding};
const CpuKernel EmbeddingGrad{prepareEmbeddingGrad, runEmbeddingGrad};
} // namespace kernels::Embedding

} // namespace mpc::runtime::cpu
