//===- ir/ops/Shape.cpp - the Shape ops' gradient rules and kernels ------===//
//
// The gradient rules of reshape, transpose, fill, slice, concat and flatten,
// which move the gradient back (reshape, the inverse permutation, concat
// with zeros, slices), and their float64 reference kernels; transpose's,
// slice's and concat's axes are read as the shape rules read them
// (ops/Shape.h). The schemas are in ops/Shape.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Shape.h"

namespace mpc::ir {

using namespace ophelpers;
using ops::concatAxisOf;
using ops::permOf;
using ops::sliceOf;
using ops::SliceRange;

namespace {

/// reshape's and flatten's kernel: the row-major data is unchanged.
void refSameData(RefOps o, const AttrMap &, RefTensor &out) { out.data = o[0]->data; }

std::vector<Node *> gradReshape(Builder &b, const Node &n, Node *dy) {
  if (n.inputs[0]->type.dtype != DType::F32) return {nullptr}; // integer ids, labels
  return {b.reshape(dy, n.inputs[0]->type.shape)};
}

std::vector<Node *> gradTranspose(Builder &b, const Node &n, Node *dy) {
  std::vector<int64_t> perm = permOf(n.inputs[0]->type, n.attrs);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {b.transpose(dy, inverse)};
}

void refTranspose(RefOps ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &x = *ops[0];
  if (out.data.empty()) return;
  std::vector<int64_t> perm = permOf(TensorType{DType::F32, x.shape}, attrs);
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> idx(out.shape.size(), 0);
  size_t flat = 0;
  do {
    int64_t src = 0;
    for (size_t i = 0; i < perm.size(); ++i) src += idx[i] * xs[size_t(perm[i])];
    out.data[flat++] = x.data[size_t(src)];
  } while (nextIndex(idx, out.shape));
}

std::vector<Node *> gradFill(Builder &, const Node &, Node *) { return {}; }

void refFill(RefOps, const AttrMap &a, RefTensor &out) {
  double v = getFloat(a, "value");
  for (double &x : out.data) x = v;
}

std::vector<Node *> gradSlice(Builder &b, const Node &n, Node *dy) {
  const TensorType &x = n.inputs[0]->type;
  if (x.dtype != DType::F32) return {nullptr};
  SliceRange s = sliceOf(x, n.attrs);
  // dy placed back at [start, end), zeros elsewhere: one concat.
  std::vector<Node *> parts;
  if (s.start > 0) {
    Shape before = x.shape;
    before[size_t(s.axis)] = s.start;
    parts.push_back(b.fill(0.0, before));
  }
  parts.push_back(dy);
  int64_t dim = x.shape[size_t(s.axis)];
  if (s.end < dim) {
    Shape after = x.shape;
    after[size_t(s.axis)] = dim - s.end;
    parts.push_back(b.fill(0.0, after));
  }
  return {parts.size() == 1 ? dy : b.concat(parts, s.axis)};
}

void refSlice(RefOps ops, const AttrMap &attrs, RefTensor &out) {
  const RefTensor &x = *ops[0];
  // The dtype does not matter to the reference: values are doubles either way.
  SliceRange r = sliceOf(TensorType{DType::F32, x.shape}, attrs);
  AxisSplit s = splitAt(x.shape, r.axis);
  int64_t len = r.end - r.start;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < s.inner; ++i)
        out.data[size_t((o * len + j) * s.inner + i)] =
            x.data[size_t((o * s.size + r.start + j) * s.inner + i)];
}

std::vector<Node *> gradConcat(Builder &b, const Node &n, Node *dy) {
  std::vector<TensorType> types;
  for (const Node *in : n.inputs) types.push_back(in->type);
  if (types[0].dtype != DType::F32) return std::vector<Node *>(n.inputs.size(), nullptr);
  if (n.inputs.size() == 1) return {dy};
  int64_t axis = concatAxisOf(types, n.attrs);
  // One slice per operand; a part of length 0 along the axis has no
  // elements: its gradient is an empty constant (slice needs start < end).
  std::vector<Node *> g;
  int64_t offset = 0;
  for (const TensorType &t : types) {
    int64_t len = t.shape[size_t(axis)];
    g.push_back(len > 0 ? b.slice(dy, axis, offset, offset + len) : b.fill(0.0, t.shape));
    offset += len;
  }
  return g;
}

void refConcat(RefOps ops, const AttrMap &attrs, RefTensor &out) {
  std::vector<TensorType> types;
  for (const RefTensor *t : ops) types.push_back(TensorType{DType::F32, t->shape});
  int64_t axis = concatAxisOf(types, attrs);
  AxisSplit so = splitAt(out.shape, axis);
  // Operand by operand: each fills its band [offset, offset + len) of the axis.
  int64_t offset = 0;
  for (const RefTensor *t : ops) {
    AxisSplit st = splitAt(t->shape, axis);
    for (int64_t o = 0; o < st.outer; ++o)
      for (int64_t j = 0; j < st.size; ++j)
        for (int64_t i = 0; i < st.inner; ++i)
          out.data[size_t((o * so.size + offset + j) * so.inner + i)] =
              t->data[size_t((o * st.size + j) * st.inner + i)];
    offset += st.size;
  }
}

std::vector<Node *> gradFlatten(Builder &b, const Node &n, Node *dy) {
  if (n.inputs[0]->type.dtype != DType::F32) return {nullptr};
  return {b.reshape(dy, n.inputs[0]->type.shape)};
}

} // namespace

void addShapeRules(RuleTable &t) {
  t[size_t(OpKind::Reshape)] = {gradReshape, refSameData};
  t[size_t(OpKind::Transpose)] = {gradTranspose, refTranspose};
  t[size_t(OpKind::Fill)] = {gradFill, refFill};
  t[size_t(OpKind::Slice)] = {gradSlice, refSlice};
  t[size_t(OpKind::Concat)] = {gradConcat, refConcat};
  t[size_t(OpKind::Flatten)] = {gradFlatten, refSameData};
}

} // namespace mpc::ir
