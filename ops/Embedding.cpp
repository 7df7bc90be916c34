//===- ops/Embedding.cpp - embedding and its scatter-add gradient --------===//
//
// embedding gathers rows of a table by i32 ids; its gradient (for the table
// only) is embedding_grad, a scatter-add of the upstream rows into a zero
// table, in the ids' row-major order so that repeated ids sum the same way on
// every backend. Both check every id against [0, V): bad ids are bad data, a
// user error naming the id's position.
//
// A family of its own rather than Shape: these are the only ops that index
// with data, so they alone can fail at run time on values, and their kernels
// (a gather and a deterministic scatter) share nothing with the strided
// copies of the Shape family.
//
// embedding's gradient rule and both reference kernels are in
// ir/ops/Embedding.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

#include <algorithm>

namespace mpc::ops {

using namespace helpers;

namespace {

TensorType inferEmbedding(TypeOps ops, const AttrMap &) {
  const TensorType &ids = ops[0], &table = ops[1];
  requireDType(ids, DType::I32, "embedding", "ids");
  requireDType(table, DType::F32, "embedding", "table");
  if (table.rank() != 2)
    throw RuleError("embedding operand 'table' must be f32[V,D], got " + table.str() +
                    " (ids " + ids.str() + ")");
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  requireValidShape(out, "embedding");
  return {DType::F32, out};
}

TensorType inferEmbeddingGrad(TypeOps ops, const AttrMap &attrs) {
  const TensorType &ids = ops[0], &dy = ops[1];
  requireDType(ids, DType::I32, "embedding_grad", "ids");
  requireDType(dy, DType::F32, "embedding_grad", "dy");
  if (dy.rank() != ids.rank() + 1 ||
      !std::equal(ids.shape.begin(), ids.shape.end(), dy.shape.begin()))
    throw RuleError("shape mismatch: " + pairStr(ids, dy) +
                    " (expected dy of the ids' shape plus one axis, f32[...,D])");
  int64_t v = getInt(attrs, "num_embeddings");
  if (v < 0)
    throw RuleError("embedding_grad num_embeddings must be >= 0, got " + std::to_string(v));
  Shape out = {v, dy.shape.back()};
  requireValidShape(out, "embedding_grad");
  return {DType::F32, out};
}

} // namespace

void addEmbeddingSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Embedding, "embedding", "Embedding",
                            "rows of table f32[V,D] picked by i32 ids of any shape: "
                            "result[..., :] = table[ids[...], :], f32 of shape ids.shape + [D]",
                            {"ids", "table"});
    r.precision = Precision::Follow;
    r.infer = inferEmbedding;
    r.flops = noFlops;
    // Rows of the ids are rows of the result; the table must be shared.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      if (q.classes[0] == BatchClass::Batched && q.operands[0].rank() == 0)
        throw RuleError("operand 'ids' " + q.operands[0].str() + " has no batch axis");
      if (q.classes[1] == BatchClass::Batched)
        throw RuleError("operand 'table' " + q.operands[1].str() +
                        " is batched, but its axis 0 indexes embeddings, not rows of the batch");
      return {};
    };
    // Tensor parallelism (ops/Layout.h): ids index rows of the whole table;
    // a vocabulary-parallel table is not supported.
    r.shard = [](const ShardQuery &q) {
      return replicatedRule(q, "embedding looks rows up in the whole table and takes whole ids "
                               "(a vocabulary-parallel table is not supported)");
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::EmbeddingGrad, "embedding_grad", "Embedding",
                            "the gradient of embedding's table: zeros f32[V,D] with each row "
                            "dy[p, :] added to row ids[p], p in row-major order (not "
                            "differentiable)",
                            {"ids", "dy"});
    r.attrs = {attr("num_embeddings", AttrType::Int, std::nullopt,
                    "V, the rows of the table (of the result)")};
    r.infer = inferEmbeddingGrad;
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &) { return elems(o[1]); };
    // A sum over every position of the ids, so over the batch.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      for (size_t i = 0; i < 2; ++i)
        if (q.classes[i] != BatchClass::Batched)
          throw RuleError("operand " + std::to_string(i) + " " + q.operands[i].str() +
                          " is not batched data, but embedding_grad sums over the batch");
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
