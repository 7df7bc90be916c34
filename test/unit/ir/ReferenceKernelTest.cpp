//===- test/unit/ir/ReferenceKernelTest.cpp - float64 reference kernels -===//
//
// Hand-computed values for each kernel family, and properties (finite
// results, softmax rows summing to one) over the whole case table.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mpc::ir {
namespace {

RefTensor tensor(Shape s, std::vector<double> v) {
  RefTensor t(std::move(s));
  t.data = std::move(v);
  return t;
}

/// Runs the reference kernel of `kind` on `ins` with `attrs` (defaults filled).
RefTensor eval(OpKind kind, std::vector<RefTensor> ins, AttrMap attrs = {}) {
  const OpInfo &info = opInfo(kind);
  AttrMap full = completeAttrs(info, std::move(attrs));
  // Class labels and embedding ids are i32.
  auto isI32 = [&](size_t i) {
    if (kind == OpKind::SoftmaxCrossEntropy || kind == OpKind::SoftmaxCrossEntropyGrad)
      return i == 1;
    return (kind == OpKind::Embedding || kind == OpKind::EmbeddingGrad) && i == 0;
  };
  std::vector<TensorType> types;
  for (const RefTensor &t : ins)
    types.push_back({isI32(types.size()) ? DType::I32 : DType::F32, t.shape});
  RefTensor out(info.infer(types, full).shape);
  std::vector<RefTensor *> ptrs;
  for (RefTensor &t : ins) ptrs.push_back(&t);
  info.reference(ptrs, full, out);
  return out;
}

void expectNear(const RefTensor &got, const std::vector<double> &want, double tol = 1e-12) {
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data[i], want[i], tol) << i;
}

TEST(Reference, MatMulAllTransposes) {
  RefTensor a = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  RefTensor b = tensor({3, 2}, {7, 8, 9, 10, 11, 12});
  expectNear(eval(OpKind::MatMul, {a, b}), {58, 64, 139, 154});
  RefTensor at = tensor({3, 2}, {1, 4, 2, 5, 3, 6});
  RefTensor bt = tensor({2, 3}, {7, 9, 11, 8, 10, 12});
  expectNear(eval(OpKind::MatMul, {at, b}, {{"transpose_a", true}}), {58, 64, 139, 154});
  expectNear(eval(OpKind::MatMul, {a, bt}, {{"transpose_b", true}}), {58, 64, 139, 154});
  expectNear(eval(OpKind::MatMul, {at, bt}, {{"transpose_a", true}, {"transpose_b", true}}),
             {58, 64, 139, 154});
}

TEST(Reference, BatchedMatMul) {
  // a [2,2,3] x b [3,1]: two products with one b.
  RefTensor a = tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  RefTensor b = tensor({3, 1}, {1, 10, 100});
  RefTensor y = eval(OpKind::MatMul, {a, b});
  EXPECT_EQ(y.shape, (Shape{2, 2, 1}));
  expectNear(y, {321, 654, 1, 10});
  // a [2,3] x b [2,3,1] with transpose_b false: b's batch broadcasts a.
  RefTensor a2 = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  RefTensor b2 = tensor({2, 3, 1}, {1, 0, 0, 0, 0, 1});
  expectNear(eval(OpKind::MatMul, {a2, b2}), {1, 4, 3, 6});
  // Size-1 batch broadcasts: a [1,1,2] x b [3,2,1] -> [3,1,1].
  RefTensor a3 = tensor({1, 1, 2}, {1, 2});
  RefTensor b3 = tensor({3, 2, 1}, {1, 1, 2, 0, 0, 3});
  expectNear(eval(OpKind::MatMul, {a3, b3}), {3, 2, 6});
  // transpose_a on the last two axes, with the accumulator.
  RefTensor at = tensor({2, 3, 2}, {1, 4, 2, 5, 3, 6, 1, 0, 0, 1, 0, 0});
  RefTensor c = tensor({2, 2, 1}, {1, 2, 3, 4});
  expectNear(eval(OpKind::MatMul, {at, b, c}, {{"transpose_a", true}}), {322, 656, 4, 14});
}

TEST(Reference, BroadcastingBinaries) {
  RefTensor col = tensor({2, 1}, {1, 2});
  RefTensor row = tensor({3}, {10, 20, 30});
  expectNear(eval(OpKind::Add, {col, row}), {11, 21, 31, 12, 22, 32});
  expectNear(eval(OpKind::Sub, {row, col}), {9, 19, 29, 8, 18, 28});
  expectNear(eval(OpKind::Mul, {tensor({}, {3}), row}), {30, 60, 90});
  expectNear(eval(OpKind::Div, {col, tensor({}, {4})}), {0.25, 0.5});
}

TEST(Reference, Activations) {
  RefTensor x = tensor({4}, {-2, -0.5, 0.5, 2});
  expectNear(eval(OpKind::Relu, {x}), {0, 0, 0.5, 2});
  expectNear(eval(OpKind::Neg, {x}), {2, 0.5, -0.5, -2});
  expectNear(eval(OpKind::Scale, {x}, {{"value", -2.0}}), {4, 1, -1, -4});
  expectNear(eval(OpKind::Scale, {x}), {-2, -0.5, 0.5, 2});
  expectNear(eval(OpKind::Sigmoid, {tensor({1}, {0})}), {0.5});
  expectNear(eval(OpKind::Tanh, {tensor({1}, {0.5})}), {std::tanh(0.5)});
  expectNear(eval(OpKind::Exp, {tensor({1}, {1})}), {M_E});
  expectNear(eval(OpKind::Log, {tensor({1}, {M_E})}), {1});
  // torch.nn.functional.gelu (exact): gelu(1) = 0.8413447460685429, gelu(-1) = -0.15865525393145707.
  expectNear(eval(OpKind::Gelu, {tensor({3}, {1, -1, 0})}),
             {0.8413447460685429, -0.15865525393145707, 0}, 1e-15);
  expectNear(eval(OpKind::ReluGrad, {x, tensor({4}, {1, 2, 3, 4})}), {0, 0, 3, 4});
  // gelu'(0) = 0.5; gelu'(1) = Phi(1) + phi(1) = 0.8413447460685429 + 0.24197072451914337.
  expectNear(eval(OpKind::GeluGrad, {tensor({2}, {0, 1}), tensor({2}, {2, 1})}),
             {1.0, 0.8413447460685429 + 0.24197072451914337}, 1e-15);
  // torch.nn.functional.gelu(x, approximate="tanh").
  AttrMap tanh = {{"approximate", std::string("tanh")}};
  expectNear(eval(OpKind::Gelu, {tensor({4}, {1, -1, 0, 2})}, tanh),
             {0.8411919906082768, -0.15880800939172324, 0, 1.954597694087775}, 1e-15);
  // The tanh form's derivative: 0.5 at 0, and a central difference at 0.7.
  double h = 1e-6, at = 0.7;
  double fd = (eval(OpKind::Gelu, {tensor({1}, {at + h})}, tanh).data[0] -
               eval(OpKind::Gelu, {tensor({1}, {at - h})}, tanh).data[0]) /
              (2 * h);
  expectNear(eval(OpKind::GeluGrad, {tensor({2}, {0, at}), tensor({2}, {3, 1})}, tanh),
             {1.5, fd}, 1e-9);
}

TEST(Reference, CausalMask) {
  RefTensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  // Row i keeps columns j <= i.
  expectNear(eval(OpKind::CausalMask, {x}), {1, -1e9, -1e9, 4, 5, -1e9});
  RefTensor tall = tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  expectNear(eval(OpKind::CausalMask, {tall}, {{"value", 0.0}}), {1, 0, 3, 4, 5, 6});
  RefTensor batch = tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectNear(eval(OpKind::CausalMask, {batch}, {{"value", -7.0}}), {1, -7, 3, 4, 5, -7, 7, 8});
}

TEST(Reference, LayerNorm) {
  // Row [1,2,3]: mean 2, biased variance 2/3.
  RefTensor x = tensor({2, 3}, {1, 2, 3, 5, 5, 5});
  RefTensor gamma = tensor({3}, {1, 2, -1}), beta = tensor({3}, {0, 1, 0.5});
  double eps = 1e-5, r = 1 / std::sqrt(2.0 / 3 + eps);
  // A constant row normalises to 0: the result is beta.
  expectNear(eval(OpKind::LayerNorm, {x, gamma, beta}),
             {-r, 1, 0.5 - r, 0, 1, 0.5}, 1e-12);
  double r2 = 1 / std::sqrt(2.0 / 3 + 0.5);
  expectNear(eval(OpKind::LayerNorm, {x, gamma, beta}, {{"eps", 0.5}}),
             {-r2, 1, 0.5 - r2, 0, 1, 0.5}, 1e-12);
  // D = 1: every x normalises to 0.
  expectNear(eval(OpKind::LayerNorm, {tensor({2, 1}, {3, -4}), tensor({1}, {2}),
                                      tensor({1}, {0.25})}),
             {0.25, 0.25});
  // dgamma = sum over rows of dy * xhat; dx of each row sums to zero.
  RefTensor dy = tensor({2, 3}, {1, 1, 1, 2, 0, -1});
  expectNear(eval(OpKind::LayerNormGammaGrad, {x, dy}), {-r, 0, r}, 1e-12);
  RefTensor dx = eval(OpKind::LayerNormGrad, {x, gamma, dy});
  EXPECT_NEAR(dx.data[0] + dx.data[1] + dx.data[2], 0, 1e-12);
  EXPECT_NEAR(dx.data[3] + dx.data[4] + dx.data[5], 0, 1e-12);
}

TEST(Reference, EmbeddingGathersAndScattersInOrder) {
  RefTensor table = tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  RefTensor ids = tensor({2, 2}, {2, 0, 2, 1});
  RefTensor y = eval(OpKind::Embedding, {ids, table});
  EXPECT_EQ(y.shape, (Shape{2, 2, 2}));
  expectNear(y, {5, 6, 1, 2, 5, 6, 3, 4});
  expectNear(eval(OpKind::Embedding, {tensor({}, {1}), table}), {3, 4});
  // Repeated ids add up; row 3 is never named and stays zero.
  RefTensor dy = tensor({2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  RefTensor g = eval(OpKind::EmbeddingGrad, {ids, dy}, {{"num_embeddings", int64_t(4)}});
  EXPECT_EQ(g.shape, (Shape{4, 2}));
  expectNear(g, {2, 20, 4, 40, 4, 40, 0, 0});
}

TEST(Reference, EmbeddingIdOutOfRangeIsAUserError) {
  RefTensor table = tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  auto message = [&](OpKind kind, RefTensor ids, RefTensor second, AttrMap attrs) {
    const OpInfo &info = opInfo(kind);
    std::vector<TensorType> types = {{DType::I32, ids.shape}, {DType::F32, second.shape}};
    RefTensor out(info.infer(types, completeAttrs(info, attrs)).shape);
    std::vector<RefTensor *> ops = {&ids, &second};
    try {
      info.reference(ops, completeAttrs(info, attrs), out);
    } catch (const UserError &e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(OpKind::Embedding, tensor({2, 3}, {0, 1, 2, 1, 3, 0}), table, {}),
            "embedding id 3 at ids[1,1] out of range [0, 3)");
  EXPECT_EQ(message(OpKind::Embedding, tensor({2}, {-1, 0}), table, {}),
            "embedding id -1 at ids[0] out of range [0, 3)");
  EXPECT_EQ(message(OpKind::Embedding, tensor({}, {7}), table, {}),
            "embedding id 7 at ids[] out of range [0, 3)");
  EXPECT_EQ(message(OpKind::EmbeddingGrad, tensor({2}, {0, 5}), tensor({2, 2}, {1, 2, 3, 4}),
                    {{"num_embeddings", int64_t(5)}}),
            "embedding id 5 at ids[1] out of range [0, 5)");
}

TEST(Reference, Reductions) {
  RefTensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(eval(OpKind::Sum, {x}), {21});
  expectNear(eval(OpKind::Sum, {x}, {{"axes", std::vector<int64_t>{0}}}), {5, 7, 9});
  expectNear(eval(OpKind::Mean, {x}, {{"axes", std::vector<int64_t>{-1}}}), {2, 5});
  expectNear(eval(OpKind::Mean, {x}), {3.5});
  expectNear(eval(OpKind::BroadcastTo, {tensor({2, 1}, {1, 2})}, {{"shape", Shape{2, 2}}}),
             {1, 1, 2, 2});
}

TEST(Reference, ShapeOps) {
  RefTensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(eval(OpKind::Transpose, {x}), {1, 4, 2, 5, 3, 6});
  RefTensor y = eval(OpKind::Reshape, {x}, {{"shape", Shape{3, -1}}});
  EXPECT_EQ(y.shape, (Shape{3, 2}));
  expectNear(y, {1, 2, 3, 4, 5, 6});
  RefTensor z = tensor({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(eval(OpKind::Transpose, {z}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
             {1, 4, 2, 5, 3, 6});
  expectNear(eval(OpKind::Fill, {}, {{"shape", Shape{3}}, {"value", 1.5}}), {1.5, 1.5, 1.5});
}

TEST(Reference, SliceAndConcat) {
  auto sl = [](int64_t axis, int64_t start, int64_t end) {
    return AttrMap{{"axis", axis}, {"start", start}, {"end", end}};
  };
  RefTensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(eval(OpKind::Slice, {x}, sl(0, 1, 2)), {4, 5, 6});
  expectNear(eval(OpKind::Slice, {x}, sl(-1, 1, 3)), {2, 3, 5, 6});
  RefTensor z = tensor({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  RefTensor m = eval(OpKind::Slice, {z}, sl(1, 1, 2));
  EXPECT_EQ(m.shape, (Shape{2, 1, 2}));
  expectNear(m, {3, 4, 9, 10});

  RefTensor a = tensor({2, 1}, {1, 2}), b = tensor({2, 2}, {3, 4, 5, 6});
  expectNear(eval(OpKind::Concat, {a, b}, {{"axis", int64_t(1)}}), {1, 3, 4, 2, 5, 6});
  expectNear(eval(OpKind::Concat, {a, b}, {{"axis", int64_t(-1)}}), {1, 3, 4, 2, 5, 6});
  RefTensor c = eval(OpKind::Concat, {tensor({1, 2}, {7, 8}), b});
  EXPECT_EQ(c.shape, (Shape{3, 2}));
  expectNear(c, {7, 8, 3, 4, 5, 6});
  RefTensor p = tensor({2, 1, 2}, {1, 2, 3, 4}), q = tensor({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  expectNear(eval(OpKind::Concat, {p, q}, {{"axis", int64_t(1)}}),
             {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  // Variadic: three operands in order, and one (the identity).
  expectNear(eval(OpKind::Concat, {a, b, a}, {{"axis", int64_t(1)}}), {1, 3, 4, 1, 2, 5, 6, 2});
  RefTensor three = eval(OpKind::Concat, {tensor({1}, {1}), tensor({2}, {2, 3}),
                                          tensor({3}, {4, 5, 6})});
  expectNear(three, {1, 2, 3, 4, 5, 6});
  expectNear(eval(OpKind::Concat, {b}, {{"axis", int64_t(1)}}), {3, 4, 5, 6});
}

TEST(Reference, SoftmaxIsStable) {
  RefTensor x = tensor({2, 3}, {1000, 1000, 1000, 0, std::log(2.0), std::log(5.0)});
  expectNear(eval(OpKind::Softmax, {x}), {1. / 3, 1. / 3, 1. / 3, 0.125, 0.25, 0.625});
  expectNear(eval(OpKind::LogSoftmax, {x}),
             {-std::log(3.0), -std::log(3.0), -std::log(3.0), std::log(0.125), std::log(0.25),
              std::log(0.625)},
             1e-12);
  // Along axis 0: columns.
  RefTensor c = tensor({2, 2}, {0, 0, std::log(3.0), 0});
  expectNear(eval(OpKind::Softmax, {c}, {{"axis", int64_t(0)}}), {0.25, 0.5, 0.75, 0.5});
  RefTensor y = tensor({1, 2}, {0.25, 0.75});
  // y * (dy - sum(dy * y)) with dy = [1, 0]: sum = 0.25.
  expectNear(eval(OpKind::SoftmaxGrad, {y, tensor({1, 2}, {1, 0})}), {0.1875, -0.1875});
}

TEST(Reference, Losses) {
  expectNear(eval(OpKind::MseLoss, {tensor({2, 2}, {1, 2, 3, 4}), tensor({2, 2}, {1, 0, 3, 0})}),
             {5});
  RefTensor logits = tensor({2, 2}, {0, std::log(3.0), 5, 5});
  RefTensor labels = tensor({2}, {1, 0});
  // -(log 0.75 + log 0.5) / 2
  expectNear(eval(OpKind::SoftmaxCrossEntropy, {logits, labels}),
             {-(std::log(0.75) + std::log(0.5)) / 2});
  const OpInfo &g = opInfo(OpKind::SoftmaxCrossEntropyGrad);
  RefTensor dy = tensor({}, {2});
  RefTensor out({2, 2});
  std::vector<RefTensor *> ops = {&logits, &labels, &dy};
  g.reference(ops, completeAttrs(g, {}), out);
  expectNear(out, {0.25, -0.25, -0.5, 0.5});
}

TEST(Reference, Conv2dHandComputed) {
  using V = std::vector<int64_t>;
  RefTensor x = tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // w picks x[i, j] - x[i + 1, j + 1].
  RefTensor w = tensor({1, 1, 2, 2}, {1, 0, 0, -1});
  expectNear(eval(OpKind::Conv2d, {x, w}), {-4, -4, -4, -4});
  expectNear(eval(OpKind::Conv2d, {x, w, tensor({1}, {0.5})}), {-3.5, -3.5, -3.5, -3.5});
  // Windows start at -1 and 1 along each axis; padding reads as zero.
  expectNear(eval(OpKind::Conv2d, {x, w}, {{"stride", V{2, 2}}, {"padding", V{1, 1}}}),
             {-1, -3, -7, -4});
  // Dilation 2: the taps are the four corners.
  expectNear(eval(OpKind::Conv2d, {x, tensor({1, 1, 2, 2}, {1, 1, 1, 1})},
                  {{"dilation", V{2, 2}}}),
             {20});
  // Two groups of one channel each: each output channel sees its own input.
  RefTensor x2 = tensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectNear(eval(OpKind::Conv2d, {x2, tensor({2, 1, 1, 1}, {2, 3})}, {{"groups", int64_t(2)}}),
             {2, 4, 6, 8, 15, 18, 21, 24});
  // dx of the first product: dy spread back through w's taps.
  expectNear(eval(OpKind::Conv2dGradInput, {tensor({1, 1, 2, 2}, {1, 1, 1, 1}), w},
                  {{"input_size", V{3, 3}}}),
             {1, 1, 0, 1, 0, -1, 0, -1, -1});
  // dw: each tap sums the 2x2 block of x it reads.
  expectNear(eval(OpKind::Conv2dGradWeight, {x, tensor({1, 1, 2, 2}, {1, 1, 1, 1})},
                  {{"kernel_size", V{2, 2}}}),
             {12, 16, 24, 28});
}

TEST(Reference, PoolsHandComputed) {
  using V = std::vector<int64_t>;
  // A tie: the first maximum (row-major) takes the whole gradient.
  RefTensor tie = tensor({1, 1, 2, 2}, {1, 3, 3, 2});
  expectNear(eval(OpKind::MaxPool2d, {tie}, {{"kernel", V{2, 2}}}), {3});
  expectNear(eval(OpKind::MaxPool2dGrad, {tie, tensor({1, 1, 1, 1}, {5})}, {{"kernel", V{2, 2}}}),
             {0, 5, 0, 0});
  // Padding 1, stride 2: each window holds one input element and three
  // padding cells, counted or not.
  RefTensor x = tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  AttrMap pad = {{"kernel", V{2, 2}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}};
  expectNear(eval(OpKind::AvgPool2d, {x}, pad), {0.25, 0.5, 0.75, 1});
  AttrMap exclude = pad;
  exclude["count_include_pad"] = false;
  expectNear(eval(OpKind::AvgPool2d, {x}, exclude), {1, 2, 3, 4});
  expectNear(eval(OpKind::MaxPool2d, {x}, pad), {1, 2, 3, 4});
  // ceil_mode: the last windows are cut by the input's edge and divide by
  // what they cover (PyTorch: [[3, 4.5], [7.5, 9]]).
  RefTensor x3 = tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  AttrMap ceil = {{"kernel", V{2, 2}}, {"ceil_mode", true}};
  expectNear(eval(OpKind::AvgPool2d, {x3}, ceil), {3, 4.5, 7.5, 9});
  AttrMap ceilGrad = ceil;
  ceilGrad["input_size"] = V{3, 3};
  expectNear(eval(OpKind::AvgPool2dGrad, {tensor({1, 1, 2, 2}, {4, 2, 2, 1})}, ceilGrad),
             {1, 1, 1, 1, 1, 1, 1, 1, 1});
  expectNear(eval(OpKind::GlobalAvgPool2d, {x}), {2.5});
  expectNear(eval(OpKind::Flatten, {x}), {1, 2, 3, 4});
}

TEST(Reference, CrossEntropySumReduction) {
  RefTensor logits = tensor({3, 2}, {0, std::log(3.0), 5, 5, 1, 2});
  RefTensor labels = tensor({3}, {1, 0, -100});
  AttrMap sum = {{"reduction", std::string("sum")}};
  // The two rows not ignored, summed: -(log 0.75 + log 0.5); dy 2 is not divided.
  expectNear(eval(OpKind::SoftmaxCrossEntropy, {logits, labels}, sum),
             {-(std::log(0.75) + std::log(0.5))});
  RefTensor dy = tensor({}, {2});
  expectNear(eval(OpKind::SoftmaxCrossEntropyGrad, {logits, labels, dy}, sum),
             {0.5, -0.5, -1, 1, 0, 0});
  // Every row ignored: the sum of nothing is 0 (as PyTorch).
  RefTensor none = tensor({3}, {-100, -100, -100});
  expectNear(eval(OpKind::SoftmaxCrossEntropy, {logits, none}, sum), {0});
}

TEST(Reference, BatchNorm) {
  // x [2, 2, 2]: channel 0 holds 1, 3, 5, 7 (mean 4, biased variance 5),
  // channel 1 holds 2, 2, 2, 2 (variance 0).
  RefTensor x = tensor({2, 2, 2}, {1, 3, 2, 2, 5, 7, 2, 2});
  RefTensor gamma = tensor({2}, {2, 1}), beta = tensor({2}, {0.5, -1});
  AttrMap eps0 = {{"eps", 0.0}};
  expectNear(eval(OpKind::BatchNorm, {x, gamma, beta}, {{"eps", 1.0}}),
             {-3 / std::sqrt(6.0) * 2 + 0.5, -1 / std::sqrt(6.0) * 2 + 0.5, -1, -1,
              1 / std::sqrt(6.0) * 2 + 0.5, 3 / std::sqrt(6.0) * 2 + 0.5, -1, -1});
  // Running statistics: mean 1, variance 4 for both channels.
  RefTensor rm = tensor({2}, {1, 1}), rv = tensor({2}, {4, 4});
  expectNear(eval(OpKind::BatchNorm, {x, gamma, beta, rm, rv}, eps0),
             {0.5, 2.5, -0.5, -0.5, 4.5, 6.5, -0.5, -0.5});
  // The update: momentum 0.9 of the old value plus 0.1 of the batch's mean
  // and biased variance.
  RefTensor m = tensor({2}, {1, 1}), v = tensor({2}, {4, 4});
  const OpInfo &u = opInfo(OpKind::BatchNormUpdate);
  RefTensor out({2});
  std::vector<RefTensor *> ops = {&m, &v, &x};
  u.reference(ops, completeAttrs(u, {}), out);
  expectNear(m, {0.9 + 0.4, 0.9 + 0.2});
  expectNear(v, {3.6 + 0.5, 3.6});
  expectNear(out, m.data);
  // dgamma = sum(dy * xhat) with dy = 1: xhat sums to 0 in each channel.
  RefTensor ones = tensor({2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  expectNear(eval(OpKind::BatchNormGammaGrad, {x, ones}, {{"eps", 1.0}}), {0, 0}, 1e-12);
  // With running statistics dx = dy * gamma / sqrt(var + eps).
  expectNear(eval(OpKind::BatchNormGrad, {x, gamma, ones, rm, rv}, eps0),
             {1, 1, 0.5, 0.5, 1, 1, 0.5, 0.5});
}

TEST(Reference, CrossEntropyIgnoresRows) {
  RefTensor logits = tensor({3, 2}, {0, std::log(3.0), 5, 5, 1, 2});
  // Row 2's label is ignore_index (-100 by default) and is not range-checked.
  RefTensor labels = tensor({3}, {1, 0, -100});
  expectNear(eval(OpKind::SoftmaxCrossEntropy, {logits, labels}),
             {-(std::log(0.75) + std::log(0.5)) / 2});
  RefTensor dy = tensor({}, {2});
  expectNear(eval(OpKind::SoftmaxCrossEntropyGrad, {logits, labels, dy}),
             {0.25, -0.25, -0.5, 0.5, 0, 0});
  // Another ignore_index: the row labelled 0 is left out; -100 is now a label.
  AttrMap ignore0 = {{"ignore_index", int64_t(0)}};
  RefTensor labels2 = tensor({3}, {1, 0, 1});
  double p2 = std::exp(2.0) / (std::exp(1.0) + std::exp(2.0));
  expectNear(eval(OpKind::SoftmaxCrossEntropy, {logits, labels2}, ignore0),
             {-(std::log(0.75) + std::log(p2)) / 2}, 1e-12);
  EXPECT_THROW(eval(OpKind::SoftmaxCrossEntropy, {logits, labels}, ignore0), UserError);
  // Every row ignored: the mean of nothing is NaN (as PyTorch), the gradient zero.
  RefTensor none = tensor({3}, {-100, -100, -100});
  EXPECT_TRUE(std::isnan(eval(OpKind::SoftmaxCrossEntropy, {logits, none}).data[0]));
  expectNear(eval(OpKind::SoftmaxCrossEntropyGrad, {logits, none, dy}), {0, 0, 0, 0, 0, 0});
  // Logits [2,1,2] with labels [2,1]: the same rows.
  RefTensor l3 = tensor({2, 1, 2}, {0, std::log(3.0), 5, 5});
  expectNear(eval(OpKind::SoftmaxCrossEntropy, {l3, tensor({2, 1}, {1, 0})}),
             {-(std::log(0.75) + std::log(0.5)) / 2});
}

TEST(Reference, CrossEntropyCasesIgnoreRows) {
  // The "ignored" cases of the table really mix ignored and counted rows.
  for (OpKind k : {OpKind::SoftmaxCrossEntropy, OpKind::SoftmaxCrossEntropyGrad})
    for (const opcases::OpCase *c : opcases::casesFor(k)) {
      AttrMap attrs = opcases::fullAttrs(*c);
      int64_t ignore = getInt(attrs, "ignore_index");
      if (ignore < 0) continue;
      std::vector<RefTensor> in = opcases::makeInputs(*c);
      int ignored = 0;
      for (double v : in[1].data) ignored += v == double(ignore);
      EXPECT_GT(ignored, 0) << c->name();
      EXPECT_LT(ignored, int(in[1].data.size())) << c->name();
    }
}

TEST(Reference, LabelOutOfRangeIsAUserError) {
  const OpInfo &ce = opInfo(OpKind::SoftmaxCrossEntropy);
  RefTensor logits = tensor({2, 3}, {0, 0, 0, 0, 0, 0});
  RefTensor labels = tensor({2}, {1, 3});
  RefTensor out(Shape{});
  std::vector<RefTensor *> ops = {&logits, &labels};
  try {
    ce.reference(ops, completeAttrs(ce, {}), out);
    FAIL() << "expected UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "label 3 out of range [0, 3)");
  }
  labels.data = {-1, 0};
  EXPECT_THROW(ce.reference(ops, completeAttrs(ce, {}), out), UserError);
}

class ReferenceCase : public ::testing::TestWithParam<const opcases::OpCase *> {};

TEST_P(ReferenceCase, FiniteAndDeterministic) {
  const opcases::OpCase &c = *GetParam();
  std::vector<RefTensor> in1 = opcases::makeInputs(c), in2 = opcases::makeInputs(c);
  for (size_t i = 0; i < in1.size(); ++i) {
    EXPECT_EQ(in1[i].data, in2[i].data);
    for (double v : in1[i].data) {
      EXPECT_EQ(v, double(float(v))) << "inputs must be float32 values";
      EXPECT_GE(v, c.input(i).lo);
      EXPECT_LE(v, c.input(i).hi);
    }
  }
  RefTensor a = opcases::runReference(c, in1), b = opcases::runReference(c, in2);
  EXPECT_EQ(a.data, b.data);
  for (double v : a.data) EXPECT_TRUE(std::isfinite(v)) << c.name();
  if (c.kind == OpKind::Softmax) {
    // Every lane sums to one: summing the result along the axis gives ones.
    AttrMap attrs = opcases::fullAttrs(c);
    RefTensor s = eval(OpKind::Sum, {a}, {{"axes", std::vector<int64_t>{getInt(attrs, "axis")}}});
    for (double v : s.data) EXPECT_NEAR(v, 1.0, 1e-12);
  }
}

std::vector<const opcases::OpCase *> everyCase() {
  std::vector<const opcases::OpCase *> v;
  for (const opcases::OpCase &c : opcases::allOpCases()) v.push_back(&c);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, ReferenceCase, ::testing::ValuesIn(everyCase()),
                         [](const auto &info) { return info.param->name(); });

} // namespace
} // namespace mpc::ir

namespace mpc::ir {
namespace {

/// dropout's mask: about 1 - p of the elements kept, each scaled by
/// 1 / (1 - p); another step, seed or key draws another mask; `offset`
/// shifts the element index (a micro-batch's copy draws its part of the
/// whole batch's mask); p = 0 keeps everything.
TEST(Reference, DropoutMask) {
  const size_t n = 100000;
  RefTensor x({int64_t(n)});
  for (size_t i = 0; i < n; ++i) x.data[i] = 1.0 + double(i % 7);
  // The run's seed and step reach the reference kernel as the attributes
  // `seed` and `step`, which the interpreter adds (defaults 0 and 1).
  auto run = [&](AttrMap extra) {
    AttrMap a = completeAttrs(opInfo(OpKind::Dropout), {{"p", 0.25}, {"key", std::string("d")}});
    for (auto &[k, v] : extra) a[k] = v;
    RefTensor out({int64_t(n)});
    std::vector<RefTensor *> ops = {&x};
    opInfo(OpKind::Dropout).reference(ops, a, out);
    return out;
  };
  RefTensor base = run({});
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (base.data[i] == 0.0) continue;
    ++kept;
    ASSERT_DOUBLE_EQ(base.data[i], x.data[i] / 0.75) << i;
  }
  EXPECT_NEAR(double(kept) / double(n), 0.75, 0.01);
  auto differs = [&](const RefTensor &t) {
    size_t d = 0;
    for (size_t i = 0; i < n; ++i) d += (t.data[i] == 0.0) != (base.data[i] == 0.0);
    return d;
  };
  EXPECT_GT(differs(run({{"step", int64_t(2)}})), n / 10);
  EXPECT_GT(differs(run({{"seed", int64_t(1)}})), n / 10);
  EXPECT_GT(differs(run({{"key", std::string("e")}})), n / 10);
  EXPECT_EQ(differs(run({{"step", int64_t(1)}, {"seed", int64_t(0)}})), 0u);
  RefTensor shifted = run({{"offset", int64_t(1000)}});
  for (size_t i = 0; i + 1000 < n; ++i)
    ASSERT_EQ(shifted.data[i] == 0.0, base.data[i + 1000] == 0.0) << i;
  RefTensor all = run({{"p", 0.0}});
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(all.data[i], x.data[i]);
}

} // namespace
} // namespace mpc::ir
