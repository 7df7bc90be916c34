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

/// Result shape ids.shape + [D].
void requireRowsOf(const KernelInstance &k, const TensorArg &rows, int64_t d,
                   const std::string &what) {
  std::vector<int64_t> want = k.in[0].shape;
  want.push_back(d);
  if (rows.shape != want)
    throw RuleError(what + " must be f32" + plan::shapeText(want) + ", got " +
                    plan::shapeText(rows.shape));
}

// embedding(ids, table): axis = V, inner = D, outer = number of ids.
void prepareEmbedding(KernelInstance &k) {
  requireDType(k.in[0], plan::DType::I32, "operand 'ids'");
  const TensorArg &table = k.in[1];
  requireDType(table, plan::DType::F32, "operand 'table'");
  if (table.rank() != 2)
    throw RuleError("operand 'table' must be f32[V,D], got " + plan::shapeText(table.shape));
  requireDType(k.out, plan::DType::F32, "the result");
  k.axis = table.shape[0];
  k.inner = table.shape[1];
  k.outer = k.in[0].numel;
  requireRowsOf(k, k.out, k.inner, "the result");
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
  requireDType(k.in[0], plan::DType::I32, "operand 'ids'");
  requireDType(k.in[1], plan::DType::F32, "operand 'dy'");
  requireDType(k.out, plan::DType::F32, "the result");
  k.axis = attrInt(k.attrMap(), "num_embeddings");
  if (k.out.rank() != 2 || k.out.shape[0] != k.axis)
    throw RuleError("result must be f32[" + std::to_string(k.axis) + ",D], got " +
                    plan::shapeText(k.out.shape));
  k.inner = k.out.shape[1];
  k.outer = k.in[0].numel;
  requireRowsOf(k, k.in[1], k.inner, "operand 'dy'");
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
const CpuKernel Embedding{prepareEmbedding, runEmbedding, 2, 2};
const CpuKernel EmbeddingGrad{prepareEmbeddingGrad, runEmbeddingGrad, 2, 2};
} // namespace kernels::Embedding

} // namespace mpc::runtime::cpu
