//===- ir/ops/Embedding.cpp - embedding's rule and kernels ---------------===//
//
// embedding's gradient rule (an embedding_grad for the table) and the float64
// reference kernels of embedding and embedding_grad, which check every id
// against [0, V) and name a bad one's position. The schemas are in
// ops/Embedding.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <cstdio>

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// "[1,2]": the multi-index of flat position `flat` in `shape`.
std::string positionOf(int64_t flat, const Shape &shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] > 0) {
      idx[i] = flat % shape[i];
      flat /= shape[i];
    }
  }
  return shapeText(idx);
}

/// The row of the table that id `p` names, checked against [0, V).
int64_t idAt(const RefTensor &ids, int64_t p, int64_t v) {
  double id = ids.data[size_t(p)];
  if (!(id >= 0 && id < double(v)) || id != std::floor(id)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", id);
    throw UserError("", "", "embedding id " + std::string(buf) + " at ids" +
                                positionOf(p, ids.shape) + " out of range [0, " +
                                std::to_string(v) + ")");
  }
  return int64_t(id);
}

std::vector<Node *> gradEmbedding(Builder &b, const Node &n, Node *dy) {
  int64_t v = n.inputs[1]->type.shape[0];
  return {nullptr, b.create(OpKind::EmbeddingGrad, {n.inputs[0], dy}, {{"num_embeddings", v}})};
}

void refEmbedding(RefOps o, const AttrMap &, RefTensor &out) {
  const RefTensor &ids = *o[0], &table = *o[1];
  int64_t v = table.shape[0], d = table.shape[1];
  for (int64_t p = 0; p < ids.numElements(); ++p) {
    int64_t row = idAt(ids, p, v);
    for (int64_t j = 0; j < d; ++j)
      out.data[size_t(p * d + j)] = table.data[size_t(row * d + j)];
  }
}

void refEmbeddingGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  const RefTensor &ids = *o[0], &dy = *o[1];
  int64_t v = getInt(a, "num_embeddings"), d = dy.shape.back();
  // Positions in row-major order, each row added in turn: a fixed order.
  for (int64_t p = 0; p < ids.numElements(); ++p) {
    int64_t row = idAt(ids, p, v);
    for (int64_t j = 0; j < d; ++j)
      out.data[size_t(row * d + j)] += dy.data[size_t(p * d + j)];
  }
}

} // namespace

void addEmbeddingRules(RuleTable &t) {
  t[size_t(OpKind::Embedding)] = {gradEmbedding, refEmbedding};
  t[size_t(OpKind::EmbeddingGrad)] = {nullptr, refEmbeddingGrad};
}

} // namespace mpc::ir
