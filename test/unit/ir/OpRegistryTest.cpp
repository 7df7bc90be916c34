//===- test/unit/ir/OpRegistryTest.cpp - the op table is complete -------===//
//
// Every OpKind has one record with a shape rule, a reference kernel and a
// doc; every op has test cases; records that are not differentiable say so.
//
//===----------------------------------------------------------------------===//
#include "ir/OpInfo.h"
#include "test/unit/ir/OpCases.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace mpc::ir {
namespace {

const char *const kOpNames[] = {
#define MPC_OP(Kind, Name, Family) Name,
#include "ops/OpList.def"
};
const char *const kOpFamilies[] = {
#define MPC_OP(Kind, Name, Family) #Family,
#include "ops/OpList.def"
};

TEST(OpRegistry, EveryKindHasItsRecord) {
  ASSERT_EQ(allOps().size(), kNumOps);
  for (size_t k = 0; k < kNumOps; ++k) {
    const OpInfo &r = opInfo(OpKind(k));
    EXPECT_EQ(size_t(r.kind), k);
    EXPECT_STREQ(r.name, kOpNames[k]);
    EXPECT_STREQ(r.family, kOpFamilies[k]) << r.name;
    EXPECT_NE(r.infer, nullptr) << r.name;
    EXPECT_NE(r.reference, nullptr) << r.name;
    EXPECT_NE(std::string(r.doc), "") << r.name;
    EXPECT_EQ(lookupOp(r.name), &r);
    EXPECT_LE(r.minArity, r.maxArity()) << r.name;
  }
  EXPECT_EQ(lookupOp("no_such_op"), nullptr);
}

TEST(OpRegistry, AttributesAreDocumentedAndTyped) {
  for (const OpInfo &r : allOps()) {
    std::set<std::string> names;
    for (const AttrSpec &a : r.attrs) {
      EXPECT_TRUE(names.insert(a.name).second) << r.name << "." << a.name;
      EXPECT_FALSE(a.doc.empty()) << r.name << "." << a.name;
      if (a.defaultValue) {
        EXPECT_EQ(attrTypeOf(*a.defaultValue), a.type) << r.name << "." << a.name;
      }
    }
  }
}

TEST(OpRegistry, NonDifferentiableOpsAreTheBackwardAndUpdateOps) {
  std::set<std::string> expected = {"relu_grad",       "gelu_grad",
                                    "tanh_grad",       "sigmoid_grad",
                                    "softmax_grad",    "softmax_cross_entropy_grad",
                                    "layer_norm_grad", "layer_norm_gamma_grad",
                                    "embedding_grad",  "sgd_update",
                                    "adam_update",     "batch_norm_grad",
                                    "batch_norm_gamma_grad", "batch_norm_update"};
  // Convolutional networks' backward ops.
  expected.insert({"conv2d_grad_input", "conv2d_grad_weight", "max_pool2d_grad",
                   "avg_pool2d_grad"});
  // Collectives: inserted after autodiff (the gradient all-reduce).
  expected.insert({"all_reduce", "reduce_scatter", "all_gather"});
  // ZeRO-1's write of the all-gathered parameter (shard-optimizer-state).
  expected.insert("assign");
  // attention's backward (one per operand).
  expected.insert("attention_grad");
  // fp16's loss scaling (loss-scale): after the backward.
  expected.insert({"count_nonfinite", "loss_scale_update"});
  std::set<std::string> actual;
  for (const OpInfo &r : allOps())
    if (!r.grad) actual.insert(r.name);
  EXPECT_EQ(actual, expected);
  for (const std::string &n : expected)
    if (!lookupOp(n)->has(kOptimizer)) {
      EXPECT_NE(std::string(lookupOp(n)->doc).find("not differentiable"), std::string::npos)
          << n;
    }
}

TEST(OpRegistry, TraitsAndMutatedOperands) {
  EXPECT_TRUE(opInfo(OpKind::Add).has(kBroadcasts));
  EXPECT_TRUE(opInfo(OpKind::Add).has(kElementwise));
  EXPECT_TRUE(opInfo(OpKind::Copy).has(kTransfer));
  EXPECT_TRUE(opInfo(OpKind::StopGradient).has(kStopsGradient));
  EXPECT_TRUE(opInfo(OpKind::Fill).has(kLeafConst));
  EXPECT_EQ(opInfo(OpKind::Fill).maxArity(), 0);
  const OpInfo &sgd = opInfo(OpKind::SgdUpdate);
  EXPECT_TRUE(sgd.has(kOptimizer));
  EXPECT_EQ(sgd.minArity, 2);
  EXPECT_EQ(sgd.maxArity(), 5); // with a guarded update's skip flag
  EXPECT_EQ(sgd.mutatedOperands, (std::vector<int>{0, 2, 3}));
  const OpInfo &adam = opInfo(OpKind::AdamUpdate);
  EXPECT_TRUE(adam.has(kOptimizer));
  EXPECT_EQ(adam.maxArity(), 6);
  EXPECT_EQ(adam.mutatedOperands, (std::vector<int>{0, 2, 3, 4}));
  for (const OpInfo &r : allOps())
    if (!r.has(kOptimizer)) {
      EXPECT_TRUE(r.mutatedOperands.empty()) << r.name;
    }
}

TEST(OpRegistry, VariadicOps) {
  std::set<std::string> variadic;
  for (const OpInfo &r : allOps())
    if (r.variadic) {
      variadic.insert(r.name);
      EXPECT_FALSE(r.operands.empty()) << r.name;
      EXPECT_EQ(r.maxArity(), OpInfo::kMaxVariadicArity) << r.name;
    }
  // Concat's parts, the collectives' one contribution per device, and the
  // gradients fp16's loss scaling counts.
  EXPECT_EQ(variadic, (std::set<std::string>{"concat", "all_reduce", "reduce_scatter", "all_gather",
                                             "count_nonfinite"}));
}

TEST(OpCoverage, EveryOpHasTestCases) {
  // Collectives are instructions over several devices, not kernels: their
  // cases are the models of test/unit/runtime/CollectiveTest.cpp and
  // test/lit/collectives/.
  for (const OpInfo &r : allOps()) {
    if (r.has(kCollective)) continue;
    EXPECT_FALSE(opcases::casesFor(r.kind).empty()) << "op '" << r.name << "' has no test case";
  }
}

TEST(OpCoverage, CaseNamesAreUnique) {
  std::set<std::string> names;
  for (const opcases::OpCase &c : opcases::allOpCases())
    EXPECT_TRUE(names.insert(c.name()).second) << c.name();
}

TEST(OpFlops, MatMulCountsTwoMNK) {
  const OpInfo &mm = opInfo(OpKind::MatMul);
  std::vector<TensorType> ops = {{DType::F32, {3, 4}}, {DType::F32, {4, 5}}};
  AttrMap a = {{"transpose_a", false}, {"transpose_b", false}};
  EXPECT_EQ(mm.flops(ops, {DType::F32, {3, 5}}, a), 2.0 * 3 * 4 * 5);
  std::vector<TensorType> tops = {{DType::F32, {4, 3}}, {DType::F32, {4, 5}}};
  a["transpose_a"] = true;
  EXPECT_EQ(mm.flops(tops, {DType::F32, {3, 5}}, a), 2.0 * 3 * 4 * 5);
}

TEST(OpFlops, BatchedMatMulCountsEveryProduct) {
  const OpInfo &mm = opInfo(OpKind::MatMul);
  AttrMap a = {{"transpose_a", false}, {"transpose_b", false}};
  std::vector<TensorType> ops = {{DType::F32, {6, 3, 4}}, {DType::F32, {4, 5}}};
  EXPECT_EQ(mm.flops(ops, {DType::F32, {6, 3, 5}}, a), 2.0 * 6 * 3 * 4 * 5);
  a["transpose_a"] = true;
  std::vector<TensorType> tops = {{DType::F32, {2, 1, 4, 3}}, {DType::F32, {7, 4, 5}}};
  EXPECT_EQ(mm.flops(tops, {DType::F32, {2, 7, 3, 5}}, a), 2.0 * 14 * 3 * 4 * 5);
}

TEST(OpFlops, EveryCaseHasNonNegativeFlopsAndCopyIsFree) {
  for (const opcases::OpCase &c : opcases::allOpCases()) {
    const OpInfo &r = opInfo(c.kind);
    TensorType result = opcases::resultType(c);
    double f = r.flops ? r.flops(c.operands, result, opcases::fullAttrs(c))
                       : double(result.numElements());
    EXPECT_GE(f, 0.0) << c.name();
    if (c.kind == OpKind::Copy) {
      EXPECT_EQ(f, 0.0);
    }
    if (c.kind == OpKind::Sum) {
      EXPECT_EQ(f, double(c.operands[0].numElements()));
    }
  }
}

} // namespace
} // namespace mpc::ir
