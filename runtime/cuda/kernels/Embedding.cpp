//===- runtime/cuda/kernels/Embedding.cpp - embedding and its gradient ------===//
//
// ids i32 of any shape index the rows of a table f32[V, D]; the result and
// dy are f32 ids.shape + [D], seen as [N, D] with N the ids' count. The only
// ops that index with data, so the only ones besides cross-entropy that
// report bad values on the device (Embedding.cu).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include <climits>

namespace mpc::runtime::cuda {

namespace {

void requireIds(const plan::Buffer *ids) {
  if (ids->dtype != plan::DType::I32) throw RuleError("buffer '" + ids->name + "' must be i32");
  if (ids->numElements() > INT_MAX)
    throw RuleError("more than " + std::to_string(INT_MAX) + " ids in buffer '" + ids->name + "'");
}

/// `rows` f32 of shape ids.shape + [d].
void requireRows(const plan::Buffer *rows, const plan::Buffer *ids, int64_t d) {
  requireF32(rows);
  std::vector<int64_t> want = ids->shape;
  want.push_back(d);
  if (rows->shape != want)
    throw RuleError("buffer '" + rows->name + "' must have the shape of ids '" + ids->name +
                    "' plus [" + std::to_string(d) + "]");
}

Launch prepareEmbedding(const KernelOperands &k) {
  requireArity(k, 2, 2);
  const plan::Buffer *ids = k.inputs[0], *table = k.inputs[1];
  requireIds(ids);
  requireF32(table);
  if (table->shape.size() != 2) throw RuleError("the table must be f32[V, D]");
  int64_t vocab = table->shape[0], d = table->shape[1];
  requireRows(k.output, ids, d);
  int64_t n = ids->numElements();
  const int32_t *idp = static_cast<const int32_t *>(k.inPtr[0]);
  const float *tp = cf(k.inPtr[1]);
  float *out = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] { launchEmbedding(idp, tp, out, n, vocab, d, ctx.dataError, ctx.stream); };
}

/// V (num_embeddings, the result's rows) and D of embedding_grad, checked.
struct GradShape {
  int64_t n = 0, vocab = 0, d = 0;
};
GradShape checkGrad(const KernelOperands &k) {
  requireArity(k, 2, 2);
  const plan::Buffer *ids = k.inputs[0], *dy = k.inputs[1], *out = k.output;
  requireIds(ids);
  GradShape g;
  g.vocab = attrInt(k.instr->attrs, "num_embeddings");
  if (g.vocab < 0 || g.vocab > INT_MAX)
    throw RuleError("num_embeddings " + std::to_string(g.vocab) + " out of range");
  requireF32(out);
  if (out->shape.size() != 2 || out->shape[0] != g.vocab)
    throw RuleError("the result must be f32[num_embeddings, D] with num_embeddings " +
                    std::to_string(g.vocab));
  g.d = out->shape[1];
  requireRows(dy, ids, g.d);
  g.n = ids->numElements();
  return g;
}

int64_t embeddingGradScratch(const KernelOperands &k) {
  GradShape g = checkGrad(k);
  return embeddingGradScratchFloats(g.n, g.vocab);
}

Launch prepareEmbeddingGrad(const KernelOperands &k) {
  GradShape g = checkGrad(k);
  const int32_t *idp = static_cast<const int32_t *>(k.inPtr[0]);
  const float *dy = cf(k.inPtr[1]);
  float *out = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchEmbeddingGrad(idp, dy, out, g.n, g.vocab, g.d, ctx.scratch, ctx.dataError, ctx.stream);
  };
}

} // namespace

namespace kernels::Embedding {
const CudaKernel Embedding{nullptr, prepareEmbedding};
const CudaKernel EmbeddingGrad{embeddingGradScratch, prepareEmbeddingGrad};
} // namespace kernels::Embedding

} // namespace mpc::runtime::cuda
