//===- test/unit/ir/OpCases.cpp - the table of op test cases ------------===//
//
// The cases per op. Inputs are drawn from a small splitmix64 stream so the
// table gives the same values on every platform; values are rounded to
// float32 so that float32 kernels and the float64 reference agree on inputs.
//
//===----------------------------------------------------------------------===//
#include "test/unit/ir/OpCases.h"


#include "ir/Builder.h"
#include "ir/OpInfo.h"
#include "support/Error.h"

#include <cmath>
#include <tuple>

namespace mpc::ir::opcases {

namespace {

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }
TensorType i32(Shape s) { return {DType::I32, std::move(s)}; }

InputSpec range(double lo, double hi) {
  InputSpec s;
  s.lo = lo;
  s.hi = hi;
  return s;
}
InputSpec avoiding(std::vector<double> points, double margin) {
  InputSpec s;
  s.avoid = std::move(points);
  s.margin = margin;
  return s;
}
InputSpec integers(double lo, double hi) {
  InputSpec s;
  s.lo = lo;
  s.hi = hi;
  s.integer = true;
  return s;
}

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform01(uint64_t &state) { return double(splitmix64(state) >> 11) * 0x1.0p-53; }

uint64_t hashName(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

double draw(const InputSpec &spec, uint64_t &state) {
  if (spec.integer) {
    double n = spec.hi - spec.lo + 1;
    return spec.lo + std::floor(uniform01(state) * n);
  }
  for (int attempt = 0;; ++attempt) {
    double v = double(float(spec.lo + (spec.hi - spec.lo) * uniform01(state)));
    bool ok = true;
    for (double p : spec.avoid) ok = ok && std::fabs(v - p) >= spec.margin;
    if (ok || attempt > 1000) return v;
  }
}

std::vector<OpCase> buildCases() {
  std::vector<OpCase> cs;
  auto add = [&](OpKind k, std::string label, std::vector<TensorType> ops, AttrMap attrs = {},
                 std::vector<InputSpec> inputs = {}) -> OpCase & {
    OpCase c{k, std::move(label), std::move(ops), std::move(attrs), std::move(inputs)};
    cs.push_back(std::move(c));
    return cs.back();
  };

  // matmul: the four transpose combinations, and size-1 dimensions.
  add(OpKind::MatMul, "nn", {f32({3, 4}), f32({4, 5})});
  add(OpKind::MatMul, "tn", {f32({4, 3}), f32({4, 5})}, {{"transpose_a", true}});
  add(OpKind::MatMul, "nt", {f32({3, 4}), f32({5, 4})}, {{"transpose_b", true}});
  add(OpKind::MatMul, "tt", {f32({4, 3}), f32({5, 4})},
      {{"transpose_a", true}, {"transpose_b", true}});
  add(OpKind::MatMul, "outer", {f32({3, 1}), f32({1, 2})});
  add(OpKind::MatMul, "dot", {f32({1, 6}), f32({6, 1})});
  // With the accumulator operand c: op(a) op(b) + c.
  add(OpKind::MatMul, "acc_nn", {f32({3, 4}), f32({4, 5}), f32({3, 5})});
  add(OpKind::MatMul, "acc_tn", {f32({4, 3}), f32({4, 5}), f32({3, 5})}, {{"transpose_a", true}});
  // Batched: leading axes broadcast as numpy.matmul; transposes act on the
  // last two axes. b of rank 2 under a batched a takes the folded dB path.
  add(OpKind::MatMul, "batch3x2", {f32({2, 3, 4}), f32({4, 5})});
  add(OpKind::MatMul, "batch3x2_nt", {f32({2, 3, 4}), f32({5, 4})}, {{"transpose_b", true}});
  add(OpKind::MatMul, "batch3x2_tn", {f32({2, 4, 3}), f32({4, 5})}, {{"transpose_a", true}});
  add(OpKind::MatMul, "batch4x2_tt", {f32({2, 2, 4, 3}), f32({5, 4})},
      {{"transpose_a", true}, {"transpose_b", true}});
  add(OpKind::MatMul, "batch2x3", {f32({3, 4}), f32({2, 4, 5})});
  add(OpKind::MatMul, "batch2x3_tt", {f32({4, 3}), f32({2, 5, 4})},
      {{"transpose_a", true}, {"transpose_b", true}});
  add(OpKind::MatMul, "batch4x4", {f32({2, 3, 2, 4}), f32({2, 3, 4, 2})});
  add(OpKind::MatMul, "batch4x4_nt", {f32({2, 3, 2, 4}), f32({2, 3, 3, 4})},
      {{"transpose_b", true}});
  add(OpKind::MatMul, "bcast_size1", {f32({1, 3, 4}), f32({2, 4, 5})});
  add(OpKind::MatMul, "bcast_both", {f32({2, 1, 3, 4}), f32({3, 4, 2})});
  add(OpKind::MatMul, "bcast_tn", {f32({3, 1, 4, 3}), f32({1, 2, 4, 2})}, {{"transpose_a", true}});
  add(OpKind::MatMul, "acc_batch", {f32({2, 3, 4}), f32({4, 5}), f32({2, 3, 5})});

  // Broadcasting binaries.
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    std::vector<InputSpec> in;
    if (k == OpKind::Div) in = {InputSpec{}, avoiding({0.0}, 0.3)};
    add(k, "same", {f32({3, 4}), f32({3, 4})}, {}, in);
    add(k, "bcast_row", {f32({3, 4}), f32({4})}, {}, in);
    add(k, "bcast_col", {f32({3, 1}), f32({1, 4})}, {}, in);
    add(k, "scalar_lhs", {f32({}), f32({2, 3})}, {}, in);
    add(k, "rank3", {f32({2, 1, 3}), f32({4, 1})}, {}, in);
    add(k, "size1", {f32({1}), f32({1})}, {}, in);
  }

  // Unary.
  struct Unary {
    OpKind kind;
    InputSpec in;
  };
  for (const Unary &u : {Unary{OpKind::Neg, {}}, Unary{OpKind::Scale, {}},
                         Unary{OpKind::Relu, avoiding({0.0}, 0.05)}, Unary{OpKind::Sigmoid, {}},
                         Unary{OpKind::Tanh, {}}, Unary{OpKind::Gelu, {}},
                         Unary{OpKind::Exp, {}}, Unary{OpKind::Log, range(0.2, 3.0)}}) {
    add(u.kind, "matrix", {f32({3, 4})}, {}, {u.in});
    add(u.kind, "scalar", {f32({})}, {}, {u.in});
    add(u.kind, "rank3", {f32({2, 1, 3})}, {}, {u.in});
  }
  add(OpKind::Scale, "value", {f32({2, 5})}, {{"value", 2.5}});
  add(OpKind::Scale, "negative", {f32({4})}, {{"value", -0.75}});
  add(OpKind::Gelu, "wide", {f32({16})}, {}, {range(-6.0, 6.0)});
  add(OpKind::Gelu, "tanh_matrix", {f32({3, 4})}, {{"approximate", std::string("tanh")}});
  add(OpKind::Gelu, "tanh_wide", {f32({16})}, {{"approximate", std::string("tanh")}},
      {range(-6.0, 6.0)});
  add(OpKind::Gelu, "none_explicit", {f32({2, 3})}, {{"approximate", std::string("none")}});

  // Backward ops (not differentiable): same-shape operands.
  add(OpKind::ReluGrad, "matrix", {f32({3, 4}), f32({3, 4})}, {}, {avoiding({0.0}, 0.05)});
  add(OpKind::ReluGrad, "scalar", {f32({}), f32({})}, {}, {avoiding({0.0}, 0.05)});
  add(OpKind::GeluGrad, "matrix", {f32({3, 4}), f32({3, 4})}, {}, {range(-4.0, 4.0)});
  add(OpKind::GeluGrad, "scalar", {f32({}), f32({})});
  add(OpKind::GeluGrad, "tanh", {f32({3, 4}), f32({3, 4})}, {{"approximate", std::string("tanh")}},
      {range(-4.0, 4.0)});
  add(OpKind::TanhGrad, "matrix", {f32({3, 4}), f32({3, 4})});
  add(OpKind::TanhGrad, "scalar", {f32({}), f32({})});
  add(OpKind::SigmoidGrad, "matrix", {f32({3, 4}), f32({3, 4})}, {}, {range(0.0, 1.0)});
  add(OpKind::SigmoidGrad, "scalar", {f32({}), f32({})}, {}, {range(0.0, 1.0)});

  // Reductions.
  for (OpKind k : {OpKind::Sum, OpKind::Mean}) {
    add(k, "all", {f32({3, 4})});
    add(k, "axis1", {f32({3, 4})}, {{"axes", std::vector<int64_t>{1}}});
    add(k, "neg_keepdims", {f32({3, 4})},
        {{"axes", std::vector<int64_t>{-1}}, {"keepdims", true}});
    add(k, "two_axes", {f32({2, 3, 4})}, {{"axes", std::vector<int64_t>{0, 2}}});
    add(k, "all_keepdims", {f32({2, 3})}, {{"keepdims", true}});
    add(k, "size1_axis", {f32({3, 1, 2})}, {{"axes", std::vector<int64_t>{1}}});
    add(k, "scalar", {f32({})});
  }
  add(OpKind::BroadcastTo, "prepend", {f32({3})}, {{"shape", std::vector<int64_t>{2, 3}}});
  add(OpKind::BroadcastTo, "stretch", {f32({2, 1})}, {{"shape", std::vector<int64_t>{2, 4}}});
  add(OpKind::BroadcastTo, "scalar", {f32({})}, {{"shape", std::vector<int64_t>{3, 2}}});
  add(OpKind::BroadcastTo, "both", {f32({1, 3})},
      {{"shape", std::vector<int64_t>{2, 4, 3}}});
  add(OpKind::BroadcastTo, "identity", {f32({2, 3})}, {{"shape", std::vector<int64_t>{2, 3}}});

  // Shape ops.
  add(OpKind::Reshape, "swap", {f32({2, 3})}, {{"shape", std::vector<int64_t>{3, 2}}});
  add(OpKind::Reshape, "flatten", {f32({2, 3})}, {{"shape", std::vector<int64_t>{-1}}});
  add(OpKind::Reshape, "infer", {f32({2, 3, 4})}, {{"shape", std::vector<int64_t>{4, -1}}});
  add(OpKind::Reshape, "labels", {i32({2, 3})}, {{"shape", std::vector<int64_t>{6}}},
      {integers(0, 9)});
  add(OpKind::Reshape, "to_scalar", {f32({1, 1})}, {{"shape", std::vector<int64_t>{}}});
  add(OpKind::Transpose, "reverse", {f32({2, 3})});
  add(OpKind::Transpose, "rotate", {f32({2, 3, 4})}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  add(OpKind::Transpose, "negative", {f32({2, 3, 4})},
      {{"perm", std::vector<int64_t>{-1, 0, 1}}});
  add(OpKind::Transpose, "size1", {f32({1, 3})}, {{"perm", std::vector<int64_t>{1, 0}}});
  add(OpKind::Fill, "matrix", {}, {{"value", 1.5}, {"shape", std::vector<int64_t>{2, 3}}});
  add(OpKind::Fill, "scalar", {}, {{"shape", std::vector<int64_t>{}}});
  add(OpKind::Slice, "rows", {f32({4, 3})}, {{"start", int64_t(1)}, {"end", int64_t(3)}});
  add(OpKind::Slice, "neg_axis", {f32({2, 5})},
      {{"axis", int64_t(-1)}, {"start", int64_t(2)}, {"end", int64_t(5)}});
  add(OpKind::Slice, "rank3_axis1", {f32({2, 4, 3})},
      {{"axis", int64_t(1)}, {"start", int64_t(1)}, {"end", int64_t(3)}});
  add(OpKind::Slice, "head", {f32({2, 3, 2})},
      {{"axis", int64_t(2)}, {"start", int64_t(0)}, {"end", int64_t(1)}});
  add(OpKind::Slice, "whole", {f32({3, 2})},
      {{"axis", int64_t(1)}, {"start", int64_t(0)}, {"end", int64_t(2)}});
  add(OpKind::Slice, "size1", {f32({1, 3})}, {{"start", int64_t(0)}, {"end", int64_t(1)}});
  add(OpKind::Slice, "labels", {i32({6})}, {{"start", int64_t(2)}, {"end", int64_t(5)}},
      {integers(0, 9)});
  add(OpKind::Concat, "rows", {f32({2, 3}), f32({1, 3})});
  add(OpKind::Concat, "neg_axis", {f32({2, 3}), f32({2, 2})}, {{"axis", int64_t(-1)}});
  add(OpKind::Concat, "rank3_axis1", {f32({2, 3, 4}), f32({2, 1, 4})}, {{"axis", int64_t(1)}});
  add(OpKind::Concat, "last", {f32({2, 2, 1}), f32({2, 2, 3})}, {{"axis", int64_t(2)}});
  add(OpKind::Concat, "size1", {f32({1}), f32({1})});
  add(OpKind::Concat, "labels", {i32({3}), i32({4})}, {}, {integers(0, 9), integers(0, 9)});
  add(OpKind::Concat, "labels_rank2", {i32({2, 1}), i32({2, 3})}, {{"axis", int64_t(1)}},
      {integers(-5, 5), integers(0, 100)});
  // Variadic: one operand (the identity) and three.
  add(OpKind::Concat, "one", {f32({2, 3})});
  add(OpKind::Concat, "one_axis1", {f32({2, 3})}, {{"axis", int64_t(1)}});
  add(OpKind::Concat, "three", {f32({2, 3}), f32({1, 3}), f32({3, 3})});
  add(OpKind::Concat, "three_last", {f32({2, 2, 1}), f32({2, 2, 3}), f32({2, 2, 2})},
      {{"axis", int64_t(-1)}});
  add(OpKind::Concat, "three_middle", {f32({2, 1, 3}), f32({2, 2, 3}), f32({2, 1, 3})},
      {{"axis", int64_t(1)}});
  add(OpKind::Concat, "labels3", {i32({2}), i32({1}), i32({3})}, {},
      {integers(0, 9), integers(0, 9), integers(0, 9)});

  // Softmax family.
  for (OpKind k : {OpKind::Softmax, OpKind::LogSoftmax}) {
    add(k, "last", {f32({3, 5})}, {}, {range(-4.0, 4.0)});
    add(k, "first", {f32({3, 5})}, {{"axis", int64_t(0)}}, {range(-4.0, 4.0)});
    add(k, "middle", {f32({2, 3, 4})}, {{"axis", int64_t(1)}});
    add(k, "vector", {f32({6})});
    add(k, "size1", {f32({4, 1})});
  }
  add(OpKind::SoftmaxGrad, "last", {f32({3, 5}), f32({3, 5})}, {}, {range(0.0, 1.0)});
  add(OpKind::SoftmaxGrad, "first", {f32({3, 5}), f32({3, 5})}, {{"axis", int64_t(0)}},
      {range(0.0, 1.0)});
  // causal_mask: square, wide and tall (non-square) matrices, batched.
  add(OpKind::CausalMask, "square", {f32({3, 3})});
  add(OpKind::CausalMask, "wide", {f32({2, 3, 5})});
  add(OpKind::CausalMask, "tall", {f32({5, 3})});
  add(OpKind::CausalMask, "rank4", {f32({2, 1, 3, 3})});
  add(OpKind::CausalMask, "value", {f32({3, 4})}, {{"value", -5.0}});
  add(OpKind::CausalMask, "one_column", {f32({2, 4, 1})});

  // Losses.
  add(OpKind::MseLoss, "matrix", {f32({4, 3}), f32({4, 3})});
  add(OpKind::MseLoss, "vector", {f32({5}), f32({5})});
  add(OpKind::MseLoss, "scalar", {f32({}), f32({})});
  add(OpKind::SoftmaxCrossEntropy, "batch", {f32({4, 5}), i32({4})}, {},
      {range(-3.0, 3.0), integers(0, 4)});
  add(OpKind::SoftmaxCrossEntropy, "one_row", {f32({1, 3}), i32({1})}, {},
      {InputSpec{}, integers(0, 2)});
  add(OpKind::SoftmaxCrossEntropy, "one_class", {f32({3, 1}), i32({3})}, {},
      {InputSpec{}, integers(0, 0)});
  add(OpKind::SoftmaxCrossEntropyGrad, "batch", {f32({4, 5}), i32({4}), f32({})}, {},
      {range(-3.0, 3.0), integers(0, 4)});
  add(OpKind::SoftmaxCrossEntropyGrad, "one_row", {f32({1, 3}), i32({1}), f32({})}, {},
      {InputSpec{}, integers(0, 2)});
  // ignore_index: class 0 is ignored (the labels of these cases include some
  // 0s and some other classes: test Reference.CrossEntropyCasesIgnoreRows).
  add(OpKind::SoftmaxCrossEntropy, "ignored", {f32({8, 3}), i32({8})},
      {{"ignore_index", int64_t(0)}}, {range(-3.0, 3.0), integers(0, 2)});
  add(OpKind::SoftmaxCrossEntropyGrad, "ignored", {f32({8, 3}), i32({8}), f32({})},
      {{"ignore_index", int64_t(0)}}, {range(-3.0, 3.0), integers(0, 2)});
  // Logits [..., C] with labels [...].
  add(OpKind::SoftmaxCrossEntropy, "rank3", {f32({2, 3, 4}), i32({2, 3})}, {},
      {range(-3.0, 3.0), integers(0, 3)});
  add(OpKind::SoftmaxCrossEntropy, "rank3_ignored", {f32({2, 4, 3}), i32({2, 4})},
      {{"ignore_index", int64_t(2)}}, {range(-3.0, 3.0), integers(0, 2)});
  add(OpKind::SoftmaxCrossEntropyGrad, "rank3", {f32({2, 3, 4}), i32({2, 3}), f32({})},
      {{"ignore_index", int64_t(1)}}, {range(-3.0, 3.0), integers(0, 3)});

  // layer_norm: D = 1 (every x normalises to 0) and larger, rank 1 to 3.
  add(OpKind::LayerNorm, "rows", {f32({3, 5}), f32({5}), f32({5})});
  add(OpKind::LayerNorm, "d1", {f32({4, 1}), f32({1}), f32({1})});
  add(OpKind::LayerNorm, "rank3", {f32({2, 3, 4}), f32({4}), f32({4})});
  add(OpKind::LayerNorm, "vector", {f32({6}), f32({6}), f32({6})});
  add(OpKind::LayerNorm, "eps", {f32({2, 3}), f32({3}), f32({3})}, {{"eps", 0.1}});
  add(OpKind::LayerNormGrad, "rows", {f32({3, 5}), f32({5}), f32({3, 5})});
  add(OpKind::LayerNormGrad, "d1", {f32({4, 1}), f32({1}), f32({4, 1})});
  add(OpKind::LayerNormGrad, "rank3", {f32({2, 3, 4}), f32({4}), f32({2, 3, 4})},
      {{"eps", 0.01}});
  add(OpKind::LayerNormGammaGrad, "rows", {f32({3, 5}), f32({3, 5})});
  add(OpKind::LayerNormGammaGrad, "d1", {f32({4, 1}), f32({4, 1})});
  add(OpKind::LayerNormGammaGrad, "rank3", {f32({2, 3, 4}), f32({2, 3, 4})});

  // embedding: ids of several ranks, more ids than rows (repeated ids).
  add(OpKind::Embedding, "matrix", {i32({3, 4}), f32({5, 3})}, {}, {integers(0, 4)});
  add(OpKind::Embedding, "repeated", {i32({8}), f32({3, 2})}, {}, {integers(0, 2)});
  add(OpKind::Embedding, "scalar_ids", {i32({}), f32({4, 3})}, {}, {integers(0, 3)});
  add(OpKind::Embedding, "rank3", {i32({2, 2, 3}), f32({6, 4})}, {}, {integers(0, 5)});
  add(OpKind::Embedding, "one_row", {i32({5}), f32({1, 3})}, {}, {integers(0, 0)});
  add(OpKind::EmbeddingGrad, "repeated", {i32({8}), f32({8, 2})}, {{"num_embeddings", int64_t(3)}},
      {integers(0, 2)});
  add(OpKind::EmbeddingGrad, "matrix", {i32({2, 3}), f32({2, 3, 4})},
      {{"num_embeddings", int64_t(5)}}, {integers(0, 4)});
  add(OpKind::EmbeddingGrad, "unused_rows", {i32({2}), f32({2, 3})},
      {{"num_embeddings", int64_t(6)}}, {integers(0, 5)});

  // Random ops: the mask is a function of the attributes (and the seed and
  // step, 0 and 1 here), so shapes, gradients and kernels check as usual.
  add(OpKind::Dropout, "half", {f32({4, 8})}, {{"p", 0.5}, {"key", std::string("d")}});
  add(OpKind::Dropout, "offset", {f32({3, 5})},
      {{"p", 0.2}, {"key", std::string("d")}, {"offset", int64_t(1000)}});
  add(OpKind::Dropout, "own_name", {f32({7})}, {{"p", 0.9}});
  // Long enough for the kernels' blocks of 32 elements, between partial
  // blocks at both ends (offset 3 is not a multiple of 4).
  add(OpKind::Dropout, "long", {f32({5, 17})},
      {{"p", 0.3}, {"key", std::string("d")}, {"offset", int64_t(3)}});
  add(OpKind::Dropout, "keep_all", {f32({2, 3})}, {{"p", 0.0}});
  // Part 1 of 3 of a tensor-parallel whole, in runs of 6 (an axis split:
  // tensor parallelism), after a micro-batch's offset.
  add(OpKind::Dropout, "part", {f32({4, 6})},
      {{"p", 0.4},
       {"key", std::string("d")},
       {"offset", int64_t(5)},
       {"parts", int64_t(3)},
       {"part", int64_t(1)},
       {"inner", int64_t(6)}});

  // Device ops.
  // attention: heads and batch as leading axes, T != S, e != d, causal or
  // not, and sizes past the CPU kernel's 64-row blocks.
  for (bool causal : {false, true}) {
    const char *tag = causal ? "_causal" : "";
    add(OpKind::Attention, std::string("heads") + tag, {f32({2, 3, 5, 4}), f32({2, 3, 7, 4}), f32({2, 3, 7, 6})},
        {{"causal", causal}});
    add(OpKind::Attention, std::string("square") + tag, {f32({6, 3}), f32({6, 3}), f32({6, 2})},
        {{"causal", causal}, {"scale", 0.7}});
    add(OpKind::Attention, std::string("blocks") + tag, {f32({1, 70, 8}), f32({1, 130, 8}), f32({1, 130, 5})},
        {{"causal", causal}});
    for (const char *wrt : {"q", "k", "v", "qkv"}) {
      add(OpKind::AttentionGrad, std::string("heads_") + wrt + tag,
          {f32({2, 2, 5, 4}), f32({2, 2, 7, 4}), f32({2, 2, 7, 3}), f32({2, 2, 5, 3})},
          {{"causal", causal}, {"wrt", std::string(wrt)}});
      add(OpKind::AttentionGrad, std::string("blocks_") + wrt + tag,
          {f32({1, 70, 8}), f32({1, 130, 8}), f32({1, 130, 5}), f32({1, 70, 5})},
          {{"causal", causal}, {"wrt", std::string(wrt)}, {"scale", 0.3}});
    }
  }

  // attention with dropout on its probabilities (the dropout op's mask over
  // [..., T, S]): whole, and as part 1 of 2 of a heads split (runs of one
  // head's T x S probabilities), with a micro-batch's offset.
  {
    const std::vector<TensorType> qkv = {f32({2, 2, 5, 4}), f32({2, 2, 7, 4}), f32({2, 2, 7, 3})};
    const AttrMap drop = {{"causal", true}, {"dropout_p", 0.3}, {"key", std::string("a")},
                          {"offset", int64_t(11)}};
    AttrMap part = drop;
    part["parts"] = int64_t(2);
    part["part"] = int64_t(1);
    part["inner"] = int64_t(2 * 5 * 7);
    add(OpKind::Attention, "dropout", qkv, drop);
    add(OpKind::Attention, "dropout_part", qkv, part);
    std::vector<TensorType> grad = qkv;
    grad.push_back(f32({2, 2, 5, 3}));
    for (const char *wrt : {"q", "v", "qkv"}) {
      AttrMap a = drop;
      a["wrt"] = std::string(wrt);
      add(OpKind::AttentionGrad, std::string("dropout_") + wrt, grad, a);
    }
    part["wrt"] = std::string("qkv");
    add(OpKind::AttentionGrad, "dropout_part_qkv", grad, part);
  }

  // cast: to and from each float type (the rounding is the reference's).
  {
    auto typed = [](DType t, Shape sh) { return TensorType{t, std::move(sh)}; };
    add(OpKind::Cast, "to_bf16", {f32({3, 4})}, {{"to", std::string("bf16")}});
    add(OpKind::Cast, "to_f16", {f32({2, 5})}, {{"to", std::string("f16")}});
    add(OpKind::Cast, "to_f32", {f32({4})}, {{"to", std::string("f32")}});
    add(OpKind::Cast, "bf16_to_f32", {typed(DType::BF16, {3, 4})}, {{"to", std::string("f32")}});
    add(OpKind::Cast, "f16_to_bf16", {typed(DType::F16, {6})}, {{"to", std::string("bf16")}});
    add(OpKind::Cast, "f16_large", {f32({8})}, {{"to", std::string("f16")}}, {range(-6e4, 6e4)});
  }
  add(OpKind::Copy, "matrix", {f32({3, 4})});
  add(OpKind::Copy, "labels", {i32({4})}, {}, {integers(0, 9)});
  add(OpKind::Copy, "scalar", {f32({})});
  add(OpKind::StopGradient, "matrix", {f32({3, 4})});

  // Optimizers: step counters are small integers (0 = first step).
  InputSpec moment2 = range(0.0, 1.0); // Adam's v is never negative
  add(OpKind::SgdUpdate, "plain", {f32({3, 2}), f32({3, 2})}, {{"lr", 0.1}});
  add(OpKind::SgdUpdate, "weight_decay", {f32({4}), f32({4})},
      {{"lr", 0.05}, {"weight_decay", 0.01}});
  add(OpKind::SgdUpdate, "momentum_first", {f32({3}), f32({3}), f32({3}), f32({1})},
      {{"lr", 0.1}, {"momentum", 0.9}}, {{}, {}, {}, integers(0, 0)});
  add(OpKind::SgdUpdate, "momentum_later", {f32({2, 3}), f32({2, 3}), f32({2, 3}), f32({1})},
      {{"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.1}}, {{}, {}, {}, integers(1, 5)});
  add(OpKind::SgdUpdate, "nesterov", {f32({3}), f32({3}), f32({3}), f32({1})},
      {{"lr", 0.1}, {"momentum", 0.8}, {"nesterov", true}, {"weight_decay", 0.001}},
      {{}, {}, {}, integers(1, 5)});
  add(OpKind::Assign, "matrix", {f32({3, 2}), f32({3, 2})});
  add(OpKind::Assign, "vector", {f32({7}), f32({7})});
  add(OpKind::AdamUpdate, "first", {f32({3, 2}), f32({3, 2}), f32({3, 2}), f32({3, 2}), f32({1})},
      {{"lr", 0.001}}, {{}, {}, {}, moment2, integers(0, 0)});
  add(OpKind::AdamUpdate, "later", {f32({5}), f32({5}), f32({5}), f32({5}), f32({1})},
      {{"lr", 0.01}, {"weight_decay", 0.01}}, {{}, {}, {}, moment2, integers(1, 9)});
  add(OpKind::AdamUpdate, "adamw", {f32({4}), f32({4}), f32({4}), f32({4}), f32({1})},
      {{"lr", 0.01}, {"weight_decay", 0.1}, {"decoupled", true}, {"beta1", 0.8}},
      {{}, {}, {}, moment2, integers(1, 9)});
  // Guarded (fp16 loss scaling): the skip flag set leaves all unchanged.
  for (auto [label, skip] : {std::pair{"guarded_run", 0.0}, std::pair{"guarded_skip", 1.0}}) {
    add(OpKind::SgdUpdate, label, {f32({3, 2}), f32({3, 2}), f32({1})},
        {{"lr", 0.1}, {"guarded", true}}, {{}, {}, integers(skip, skip)});
    add(OpKind::SgdUpdate, std::string(label) + "_momentum",
        {f32({3}), f32({3}), f32({3}), f32({1}), f32({1})},
        {{"lr", 0.1}, {"momentum", 0.9}, {"guarded", true}},
        {{}, {}, {}, integers(1, 5), integers(skip, skip)});
    add(OpKind::AdamUpdate, label, {f32({4}), f32({4}), f32({4}), f32({4}), f32({1}), f32({1})},
        {{"lr", 0.01}, {"guarded", true}}, {{}, {}, {}, moment2, integers(1, 9), integers(skip, skip)});
  }
  add(OpKind::CountNonfinite, "one", {f32({3, 4})});
  add(OpKind::CountNonfinite, "three", {f32({5}), f32({2, 3}), f32({})});
  // loss_scale_update: a clean step, a step at the growth interval, a step
  // with inf or NaN gradients.
  add(OpKind::LossScaleUpdate, "clean", {f32({1}), f32({1}), f32({1}), f32({1})},
      {{"growth_interval", int64_t(10)}},
      {range(1.0, 100.0), integers(0, 5), integers(0, 3), integers(0, 0)});
  add(OpKind::LossScaleUpdate, "grow", {f32({1}), f32({1}), f32({1}), f32({1})},
      {{"growth_interval", int64_t(3)}},
      {range(1.0, 100.0), integers(2, 2), integers(0, 3), integers(0, 0)});
  add(OpKind::LossScaleUpdate, "back_off", {f32({1}), f32({1}), f32({1}), f32({1})}, {},
      {range(1.0, 100.0), integers(0, 5), integers(0, 3), integers(1, 7)});

  // Convolutional networks. conv2d: stride, padding, dilation, groups
  // (depthwise too), bias or not, odd and non-square sizes; the backward ops
  // on the shapes of the forward cases.
  using V = std::vector<int64_t>;
  add(OpKind::Conv2d, "basic", {f32({2, 3, 5, 5}), f32({4, 3, 3, 3})});
  add(OpKind::Conv2d, "bias_stride2_pad", {f32({2, 3, 6, 7}), f32({4, 3, 3, 3}), f32({4})},
      {{"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::Conv2d, "dilation2", {f32({1, 2, 7, 6}), f32({3, 2, 2, 3})},
      {{"dilation", V{2, 2}}});
  add(OpKind::Conv2d, "groups2_bias", {f32({2, 4, 5, 5}), f32({6, 2, 3, 3}), f32({6})},
      {{"groups", int64_t(2)}, {"padding", V{1, 0}}});
  add(OpKind::Conv2d, "mixed_odd", {f32({1, 3, 7, 5}), f32({2, 3, 3, 2})},
      {{"stride", V{2, 1}}, {"padding", V{0, 1}}, {"dilation", V{1, 2}}});
  add(OpKind::Conv2d, "one_by_one", {f32({3, 2, 4, 4}), f32({5, 2, 1, 1}), f32({5})});
  add(OpKind::Conv2d, "depthwise", {f32({1, 3, 5, 5}), f32({3, 1, 3, 3})},
      {{"groups", int64_t(3)}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::Conv2dGradInput, "basic", {f32({2, 4, 3, 3}), f32({4, 3, 3, 3})},
      {{"input_size", V{5, 5}}});
  add(OpKind::Conv2dGradInput, "stride2_pad", {f32({2, 4, 3, 4}), f32({4, 3, 3, 3})},
      {{"input_size", V{6, 7}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::Conv2dGradInput, "groups2_dilation", {f32({1, 6, 5, 4}), f32({6, 2, 2, 3})},
      {{"input_size", V{7, 6}}, {"groups", int64_t(2)}, {"dilation", V{2, 1}}});
  add(OpKind::Conv2dGradWeight, "basic", {f32({2, 3, 5, 5}), f32({2, 4, 3, 3})},
      {{"kernel_size", V{3, 3}}});
  add(OpKind::Conv2dGradWeight, "stride2_pad", {f32({2, 3, 6, 7}), f32({2, 4, 3, 4})},
      {{"kernel_size", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::Conv2dGradWeight, "groups2_dilation", {f32({1, 4, 7, 6}), f32({1, 6, 5, 4})},
      {{"kernel_size", V{2, 3}}, {"groups", int64_t(2)}, {"dilation", V{2, 1}}});

  // Pools: stride = kernel by default, padding, ceil_mode (with the last
  // window dropped when it would start in the right padding: ceil_pad),
  // count_include_pad both ways, rectangular kernels.
  add(OpKind::MaxPool2d, "k2", {f32({2, 3, 4, 4})}, {{"kernel", V{2, 2}}});
  add(OpKind::MaxPool2d, "k3s2_pad", {f32({1, 2, 7, 7})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::MaxPool2d, "ceil", {f32({1, 2, 6, 5})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"ceil_mode", true}});
  add(OpKind::MaxPool2d, "ceil_pad", {f32({1, 1, 5, 5})},
      {{"kernel", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true}});
  add(OpKind::MaxPool2d, "rect", {f32({2, 2, 5, 6})}, {{"kernel", V{2, 3}}, {"stride", V{1, 2}}});
  add(OpKind::MaxPool2dGrad, "k2", {f32({2, 3, 4, 4}), f32({2, 3, 2, 2})}, {{"kernel", V{2, 2}}});
  add(OpKind::MaxPool2dGrad, "k3s2_pad", {f32({1, 2, 7, 7}), f32({1, 2, 4, 4})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::MaxPool2dGrad, "ceil_pad", {f32({1, 1, 5, 5}), f32({1, 1, 3, 3})},
      {{"kernel", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true}});
  add(OpKind::AvgPool2d, "k2", {f32({2, 3, 4, 4})}, {{"kernel", V{2, 2}}});
  add(OpKind::AvgPool2d, "pad_include", {f32({1, 2, 5, 5})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
  add(OpKind::AvgPool2d, "pad_exclude", {f32({1, 2, 5, 5})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}},
       {"count_include_pad", false}});
  add(OpKind::AvgPool2d, "ceil_include", {f32({1, 2, 6, 5})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true}});
  add(OpKind::AvgPool2d, "ceil_exclude", {f32({1, 2, 6, 5})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true},
       {"count_include_pad", false}});
  add(OpKind::AvgPool2d, "rect_stride", {f32({2, 1, 7, 6})},
      {{"kernel", V{2, 3}}, {"stride", V{3, 1}}});
  add(OpKind::AvgPool2dGrad, "k2", {f32({2, 3, 2, 2})},
      {{"kernel", V{2, 2}}, {"input_size", V{4, 4}}});
  add(OpKind::AvgPool2dGrad, "ceil_include", {f32({1, 2, 4, 3})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true},
       {"input_size", V{6, 5}}});
  add(OpKind::AvgPool2dGrad, "ceil_exclude", {f32({1, 2, 4, 3})},
      {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true},
       {"count_include_pad", false}, {"input_size", V{6, 5}}});
  add(OpKind::GlobalAvgPool2d, "planes", {f32({2, 3, 4, 5})});
  add(OpKind::GlobalAvgPool2d, "one_pixel", {f32({1, 2, 1, 1})});
  add(OpKind::GlobalAvgPool2d, "odd", {f32({3, 1, 7, 3})});
  add(OpKind::Flatten, "rank3", {f32({2, 3, 4})});
  add(OpKind::Flatten, "nchw", {f32({3, 2, 2, 2})});
  add(OpKind::Flatten, "rank2", {f32({4, 5})});
  add(OpKind::Flatten, "labels", {i32({2, 3, 2})}, {}, {integers(0, 9)});
  // softmax_cross_entropy with reduction "sum" (and its gradient), with and
  // without ignored rows.
  add(OpKind::SoftmaxCrossEntropy, "sum", {f32({4, 5}), i32({4})},
      {{"reduction", std::string("sum")}}, {range(-3.0, 3.0), integers(0, 4)});
  add(OpKind::SoftmaxCrossEntropy, "sum_ignored", {f32({2, 4, 3}), i32({2, 4})},
      {{"reduction", std::string("sum")}, {"ignore_index", int64_t(1)}},
      {range(-3.0, 3.0), integers(0, 2)});
  add(OpKind::SoftmaxCrossEntropyGrad, "sum", {f32({4, 5}), i32({4}), f32({})},
      {{"reduction", std::string("sum")}}, {range(-3.0, 3.0), integers(0, 4)});
  add(OpKind::SoftmaxCrossEntropyGrad, "sum_ignored", {f32({8, 3}), i32({8}), f32({})},
      {{"reduction", std::string("sum")}, {"ignore_index", int64_t(0)}},
      {range(-3.0, 3.0), integers(0, 2)});

  // batch_norm: [N, C] and NCHW, the channel axis last, running statistics
  // as operands (variances kept away from 0), and the running update.
  InputSpec runVar = range(0.5, 2.0);
  add(OpKind::BatchNorm, "nc", {f32({4, 3}), f32({3}), f32({3})});
  add(OpKind::BatchNorm, "nchw", {f32({2, 3, 2, 2}), f32({3}), f32({3})}, {{"eps", 0.01}});
  add(OpKind::BatchNorm, "axis_last", {f32({4, 2, 3}), f32({3}), f32({3})},
      {{"axis", int64_t(-1)}});
  add(OpKind::BatchNorm, "running", {f32({2, 3, 2, 2}), f32({3}), f32({3}), f32({3}), f32({3})},
      {{"use_global_stats", true}}, {{}, {}, {}, {}, runVar});
  add(OpKind::BatchNormGrad, "nc", {f32({4, 3}), f32({3}), f32({4, 3})});
  add(OpKind::BatchNormGrad, "nchw", {f32({2, 3, 2, 2}), f32({3}), f32({2, 3, 2, 2})});
  add(OpKind::BatchNormGrad, "running",
      {f32({2, 3, 2, 2}), f32({3}), f32({2, 3, 2, 2}), f32({3}), f32({3})}, {},
      {{}, {}, {}, {}, runVar});
  add(OpKind::BatchNormGammaGrad, "nchw", {f32({2, 3, 2, 2}), f32({2, 3, 2, 2})});
  add(OpKind::BatchNormGammaGrad, "axis_last", {f32({4, 2, 3}), f32({4, 2, 3})},
      {{"axis", int64_t(2)}});
  add(OpKind::BatchNormGammaGrad, "running",
      {f32({2, 3, 2, 2}), f32({2, 3, 2, 2}), f32({3}), f32({3})}, {}, {{}, {}, {}, runVar});
  add(OpKind::BatchNormUpdate, "nchw", {f32({3}), f32({3}), f32({2, 3, 2, 2})}, {},
      {{}, runVar});
  add(OpKind::BatchNormUpdate, "nc", {f32({5}), f32({5}), f32({4, 5})}, {{"momentum", 0.5}},
      {{}, runVar});

  return cs;
}

} // namespace

std::string OpCase::name() const {
  return std::string(opInfo(kind).name) + "_" + label;
}

const InputSpec &OpCase::input(size_t i) const {
  static const InputSpec kDefault;
  return i < inputs.size() ? inputs[i] : kDefault;
}

const std::vector<OpCase> &allOpCases() {
  static const std::vector<OpCase> cases = buildCases();
  return cases;
}

const std::vector<OpCase> &lowPrecisionCases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> out;
    for (const OpCase &c : allOpCases()) {
      const OpInfo &info = opInfo(c.kind);
      if (info.precision != ops::Precision::Low && info.precision != ops::Precision::Follow)
        continue;
      bool anyFloat = false;
      for (const TensorType &t : c.operands) anyFloat |= t.dtype == DType::F32;
      if (!anyFloat) continue;
      // One rounding of the result, at the low type's unit roundoff (2^-8
      // for bf16, 2^-11 for f16), twice over: the kernel computes in f32
      // and the reference in float64, so a result on a rounding boundary may
      // round to either neighbour.
      for (auto [type, ulp, suffix] : {std::tuple{DType::BF16, 0x1p-7, "_bf16"},
                                       std::tuple{DType::F16, 0x1p-10, "_f16"}}) {
        OpCase v = c;
        v.label += suffix;
        for (size_t i = 0; i < v.operands.size(); ++i)
          if (v.operands[i].dtype == DType::F32 && int(i) != info.f32Accumulator)
            v.operands[i].dtype = type;
        v.tol = std::max(c.tol, 2 * ulp);
        out.push_back(std::move(v));
      }
    }
    return out;
  }();
  return cases;
}

std::vector<const OpCase *> casesFor(OpKind kind) {
  std::vector<const OpCase *> out;
  for (const OpCase &c : allOpCases())
    if (c.kind == kind) out.push_back(&c);
  return out;
}

std::vector<RefTensor> makeInputs(const OpCase &c, uint64_t seed) {
  std::vector<RefTensor> out;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    uint64_t state = hashName(c.name()) ^ (seed * 0x9E3779B97F4A7C15ull) ^ (i + 1);
    RefTensor t(c.operands[i].shape);
    for (double &v : t.data) v = draw(c.input(i), state);
    // A bf16 or f16 operand holds only what its type can.
    roundToType(t, c.operands[i].dtype);
    out.push_back(std::move(t));
  }
  return out;
}

AttrMap fullAttrs(const OpCase &c) { return completeAttrs(opInfo(c.kind), c.attrs); }

TensorType resultType(const OpCase &c) {
  const OpInfo &info = opInfo(c.kind);
  return info.resultType(c.operands, fullAttrs(c));
}

std::string AliasCase::name() const { return c->name() + "_in" + std::to_string(operand); }

std::vector<AliasCase> aliasCases(const std::vector<const OpCase *> &cases) {
  std::vector<AliasCase> out;
  for (const OpCase *c : cases) {
    TensorType result = resultType(*c);
    for (int k : opInfo(c->kind).inPlaceOperands)
      if (size_t(k) < c->operands.size() && c->operands[size_t(k)] == result)
        out.push_back({c, k});
  }
  return out;
}

RefTensor runReference(const OpCase &c, std::vector<RefTensor> &inputs) {
  RefTensor out(resultType(c).shape);
  std::vector<RefTensor *> ptrs;
  for (RefTensor &t : inputs) ptrs.push_back(&t);
  opInfo(c.kind).reference(ptrs, fullAttrs(c), out);
  roundToType(out, resultType(c).dtype);
  return out;
}

double errorOf(double got, double want) {
  double abs = std::fabs(got - want);
  double rel = want != 0 ? abs / std::fabs(want) : abs;
  return std::min(abs, rel);
}

RefTensor randomTensor(const Shape &shape, uint64_t seed, double lo, double hi) {
  RefTensor t(shape);
  uint64_t state = seed ^ 0xD1B54A32D192ED03ull;
  for (double &v : t.data) v = double(float(lo + (hi - lo) * uniform01(state)));
  return t;
}

} // namespace mpc::ir::opcases
