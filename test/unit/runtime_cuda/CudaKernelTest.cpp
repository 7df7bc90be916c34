//===- test/unit/runtime_cuda/CudaKernelTest.cpp - every CUDA kernel ----===//
//
// Each case of the op case table (test/unit/ir/OpCases.h), plus larger cases
// with odd sizes, broadcasting and every reduction path, runs as a one-
// instruction plan through the CUDA backend and the Executor, and is
// compared with the op's float64 reference kernel and with the CPU backend
// on the same inputs: the result and, for optimizer ops, every operand they
// update in place. Skips (saying so) when no GPU is visible.
//
// Alias safety: every case of an op that may run in place
// (ir::OpInfo::inPlaceOperands) runs again with the result written into the
// aliased operand's buffer and must equal the out-of-place GPU result bit
// for bit (codegen/InPlace.cpp relies on it).
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime_cuda/CudaTestUtil.h"

#include "ir/OpInfo.h"
#include "runtime/Executor.h"
#include "runtime/cuda/kernels/CudaKernels.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"
#include "test/unit/runtime/TensorBytes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace mpc::runtime::cuda {
namespace {

using namespace ir::opcases;
using ir::OpKind;
using ir::TensorType;

TensorType f32(ir::Shape s) { return {ir::DType::F32, std::move(s)}; }
TensorType i32(ir::Shape s) { return {ir::DType::I32, std::move(s)}; }

InputSpec spec(double lo, double hi, bool integer = false) {
  InputSpec s;
  s.lo = lo;
  s.hi = hi;
  s.integer = integer;
  return s;
}

/// Cases beyond the table: sizes that are not multiples of the block or warp
/// size, broadcasting in several dims, and each reduction variant (row,
/// column, split, full).
const std::vector<OpCase> &largeCases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> cs;
    auto add = [&](OpKind k, std::string label, std::vector<TensorType> ops,
                   ir::AttrMap attrs = {}, std::vector<InputSpec> in = {}, double tol = 1e-4) {
      OpCase c;
      c.kind = k;
      c.label = "large_" + label;
      c.operands = std::move(ops);
      c.attrs = std::move(attrs);
      c.inputs = std::move(in);
      c.tol = tol;
      cs.push_back(std::move(c));
    };
    using V = std::vector<int64_t>;
    add(OpKind::MatMul, "nn", {f32({129, 257}), f32({257, 65})});
    add(OpKind::MatMul, "tn", {f32({257, 129}), f32({257, 65})}, {{"transpose_a", true}});
    add(OpKind::MatMul, "nt", {f32({129, 257}), f32({65, 257})}, {{"transpose_b", true}});
    add(OpKind::MatMul, "tt", {f32({257, 129}), f32({65, 257})},
        {{"transpose_a", true}, {"transpose_b", true}});
    add(OpKind::Add, "row", {f32({257, 1031}), f32({1031})});
    add(OpKind::Sub, "col", {f32({33, 1, 17}), f32({5, 1})});
    add(OpKind::Mul, "both", {f32({1, 7, 1}), f32({6, 1, 9})});
    add(OpKind::Div, "scalar", {f32({1001}), f32({})}, {}, {{}, spec(0.5, 2.0)});
    add(OpKind::Gelu, "odd", {f32({4097})});
    add(OpKind::Tanh, "odd", {f32({3, 333})});
    add(OpKind::ReluGrad, "odd", {f32({1001, 3}), f32({1001, 3})});
    add(OpKind::GeluGrad, "odd", {f32({999}), f32({999})});
    add(OpKind::TanhGrad, "odd", {f32({999}), f32({999})});
    add(OpKind::SigmoidGrad, "odd", {f32({999}), f32({999})});
    add(OpKind::Sum, "column", {f32({1000, 37})}, {{"axes", V{0}}});
    add(OpKind::Sum, "row", {f32({37, 1000})}, {{"axes", V{1}}});
    add(OpKind::Sum, "split", {f32({3, 70001})}, {{"axes", V{1}}});
    add(OpKind::Mean, "all", {f32({300007})});
    add(OpKind::Mean, "keepdims", {f32({7, 9, 11})}, {{"axes", V{0, 2}}, {"keepdims", true}});
    add(OpKind::Sum, "middle", {f32({4, 5000, 3})}, {{"axes", V{1}}});
    add(OpKind::BroadcastTo, "rows", {f32({1, 37})}, {{"shape", V{129, 37}}});
    add(OpKind::Transpose, "3d", {f32({17, 33, 5})}, {{"perm", V{2, 0, 1}}});
    add(OpKind::Slice, "cols", {f32({129, 1031})},
        {{"axis", int64_t(-1)}, {"start", int64_t(17)}, {"end", int64_t(1000)}});
    add(OpKind::Slice, "middle", {f32({7, 300, 5})},
        {{"axis", int64_t(1)}, {"start", int64_t(33)}, {"end", int64_t(290)}});
    add(OpKind::Concat, "middle", {f32({33, 257, 5}), f32({33, 100, 5})}, {{"axis", int64_t(1)}});
    add(OpKind::Concat, "labels", {i32({1025}), i32({3001})}, {},
        {spec(0, 9, true), spec(-100, 100, true)});
    add(OpKind::Softmax, "wide", {f32({333, 1029})}, {}, {spec(-6, 6)});
    add(OpKind::LogSoftmax, "middle", {f32({7, 300, 5})}, {{"axis", int64_t(1)}}, {spec(-6, 6)});
    add(OpKind::SoftmaxGrad, "wide", {f32({100, 1000}), f32({100, 1000})}, {}, {spec(0, 1)});
    add(OpKind::MseLoss, "batch", {f32({2048, 33}), f32({2048, 33})});
    add(OpKind::SoftmaxCrossEntropy, "batch", {f32({1025, 10}), i32({1025})}, {},
        {spec(-3, 3), spec(0, 9, true)});
    add(OpKind::SoftmaxCrossEntropyGrad, "batch", {f32({1025, 37}), i32({1025}), f32({})}, {},
        {spec(-3, 3), spec(0, 36, true)});
    add(OpKind::AdamUpdate, "odd",
        {f32({1000, 17}), f32({1000, 17}), f32({1000, 17}), f32({1000, 17}), f32({1})},
        {{"lr", 0.01}, {"weight_decay", 0.01}}, {{}, {}, {}, spec(0, 1), spec(1, 9, true)});
    add(OpKind::SgdUpdate, "nesterov", {f32({4099}), f32({4099}), f32({4099}), f32({1})},
        {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}}, {{}, {}, {}, spec(1, 5, true)});
    // CNN ops past one block of threads, with groups, stride, padding and
    // dilation (grid-stride loops, strided-batched GEMMs over the groups).
    add(OpKind::Conv2d, "groups", {f32({3, 16, 33, 31}), f32({24, 4, 3, 3}), f32({24})},
        {{"groups", int64_t(4)}, {"stride", V{2, 1}}, {"padding", V{1, 1}}});
    add(OpKind::Conv2dGradInput, "dilation", {f32({2, 24, 29, 27}), f32({24, 8, 3, 3})},
        {{"groups", int64_t(2)}, {"dilation", V{2, 2}}, {"input_size", V{33, 31}}});
    add(OpKind::Conv2dGradWeight, "stride", {f32({4, 16, 33, 31}), f32({4, 8, 17, 16})},
        {{"kernel_size", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}});
    add(OpKind::MaxPool2d, "ceil", {f32({4, 16, 33, 31})},
        {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true}});
    add(OpKind::MaxPool2dGrad, "overlap", {f32({4, 16, 33, 31}), f32({4, 16, 31, 29})},
        {{"kernel", V{3, 3}}, {"stride", V{1, 1}}});
    add(OpKind::AvgPool2d, "exclude", {f32({4, 16, 33, 31})},
        {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true},
         {"count_include_pad", false}});
    add(OpKind::AvgPool2dGrad, "include", {f32({4, 16, 17, 16})},
        {{"kernel", V{3, 3}}, {"stride", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true},
         {"input_size", V{33, 31}}});
    add(OpKind::GlobalAvgPool2d, "planes", {f32({8, 129, 7, 9})});
    return cs;
  }();
  return cases;
}

std::vector<const OpCase *> allCases() {
  std::vector<const OpCase *> out;
  for (const OpCase &c : allOpCases()) out.push_back(&c);
  for (const OpCase &c : largeCases()) out.push_back(&c);
  // bf16 and f16: the kernels run on f32 staging copies (CudaDevice).
  for (const OpCase &c : lowPrecisionCases()) out.push_back(&c);
  return out;
}

using test::bytesOf;
using test::valuesOf;

/// The values after one step: the result, then every operand.
std::vector<std::vector<double>> runOnce(const plan::Plan &p, BackendFactory factory,
                                         std::unique_ptr<Transport> transport,
                                         const std::vector<ir::RefTensor> &inputs) {
  Executor exec(p, std::move(factory), std::move(transport));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<uint8_t> b = bytesOf(inputs[i], p.inputs[i].dtype);
    exec.write(p.inputs[i], b.data(), b.size());
  }
  exec.step();
  std::vector<std::vector<double>> out;
  for (const plan::TensorRef *t : {&p.outputs[0]}) {
    std::vector<uint8_t> b(size_t(t->numElements()) * size_t(ops::dtypeSize(t->dtype)));
    exec.read(*t, b.data(), b.size());
    out.push_back(valuesOf(b, t->dtype));
  }
  for (const plan::TensorRef &t : p.inputs) {
    std::vector<uint8_t> b(size_t(t.numElements()) * size_t(ops::dtypeSize(t.dtype)));
    exec.read(t, b.data(), b.size());
    out.push_back(valuesOf(b, t.dtype));
  }
  return out;
}

void expectClose(const std::vector<double> &got, const std::vector<double> &want, double tol,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool bothNan = std::isnan(got[i]) && std::isnan(want[i]);
    if (got[i] == want[i]) continue; // infinities too
    double err = errorOf(got[i], want[i]);
    if (!bothNan && !(err <= tol) && reported++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i]
                    << " (error " << err << " > " << tol << ")";
  }
}

/// A case as a one-kernel plan, its float32-exact inputs, and the float64
/// reference result (refInputs carry the reference's in-place updates).
struct PreparedCase {
  plan::Plan plan;
  std::vector<ir::RefTensor> inputs, refInputs;
  ir::RefTensor want;
  double tol;
};

PreparedCase prepare(const OpCase &c) {
  PreparedCase pc;
  pc.plan = test::singleOpPlan(ir::opInfo(c.kind).name, fullAttrs(c), c.operands, resultType(c));
  pc.inputs = makeInputs(c);
  pc.refInputs = pc.inputs;
  pc.want = runReference(c, pc.refInputs);
  pc.tol = std::max(c.tol, 1e-5);
  return pc;
}

class CudaKernelCase : public ::testing::TestWithParam<const OpCase *> {};

TEST_P(CudaKernelCase, MatchesReferenceAndCpuBackend) {
  MPC_REQUIRE_GPU();
  const OpCase &c = *GetParam();
  auto [p, inputs, refInputs, want, tol] = prepare(c);

  CudaRun run = prepareCudaRun(p, {});
  auto gpu = runOnce(p, run.factory, std::move(run.transport), inputs);
  auto cpu = runOnce(p, cpuBackendFactory(), nullptr, inputs);
  expectClose(gpu[0], want.data, tol, c.name() + " result vs reference");
  expectClose(gpu[0], cpu[0], tol, c.name() + " result vs cpu");
  for (int m : ir::opInfo(c.kind).mutatedOperands) {
    if (size_t(m) >= inputs.size()) continue;
    expectClose(gpu[size_t(m) + 1], refInputs[size_t(m)].data, tol,
                c.name() + " operand " + std::to_string(m) + " vs reference");
    expectClose(gpu[size_t(m) + 1], cpu[size_t(m) + 1], tol,
                c.name() + " operand " + std::to_string(m) + " vs cpu");
  }
}

// Runs everywhere: the same one-instruction plans and inputs on the CPU
// backend agree with the reference, so a GPU failure above is the kernel's,
// not the harness's.
TEST_P(CudaKernelCase, HarnessOnCpuBackendMatchesReference) {
  const OpCase &c = *GetParam();
  auto [p, inputs, refInputs, want, tol] = prepare(c);
  auto cpu = runOnce(p, cpuBackendFactory(), nullptr, inputs);
  expectClose(cpu[0], want.data, tol, c.name() + " result");
  for (int m : ir::opInfo(c.kind).mutatedOperands)
    if (size_t(m) < inputs.size())
      expectClose(cpu[size_t(m) + 1], refInputs[size_t(m)].data, tol,
                  c.name() + " operand " + std::to_string(m));
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaKernelCase, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<const OpCase *> &info) {
                           return info.param->name();
                         });

/// Equal as float32 bit patterns (NaNs of the same payload, signed zeros).
void expectSameBits(const std::vector<double> &got, const std::vector<double> &want,
                    const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    float g = float(got[i]), w = float(want[i]);
    if (std::memcmp(&g, &w, 4) != 0 && reported++ < 5)
      ADD_FAILURE() << what << " element " << i << ": in place " << g << ", out of place " << w;
  }
}

class CudaKernelAlias : public ::testing::TestWithParam<AliasCase> {};

TEST_P(CudaKernelAlias, InPlaceMatchesOutOfPlaceBitForBit) {
  MPC_REQUIRE_GPU();
  const OpCase &c = *GetParam().c;
  size_t k = size_t(GetParam().operand);
  PreparedCase pc = prepare(c);
  plan::Plan in = test::inPlaceVariant(pc.plan, k);
  CudaRun outRun = prepareCudaRun(pc.plan, {});
  auto want = runOnce(pc.plan, outRun.factory, std::move(outRun.transport), pc.inputs);
  CudaRun inRun = prepareCudaRun(in, {});
  auto got = runOnce(in, inRun.factory, std::move(inRun.transport), pc.inputs);
  expectSameBits(got[0], want[0], GetParam().name());
}

// Runs everywhere: the in-place plans through the executor on the CPU
// backend, so a GPU failure above is the kernel's, not the harness's.
TEST_P(CudaKernelAlias, InPlaceHarnessOnCpuBackend) {
  const OpCase &c = *GetParam().c;
  PreparedCase pc = prepare(c);
  plan::Plan in = test::inPlaceVariant(pc.plan, size_t(GetParam().operand));
  auto want = runOnce(pc.plan, cpuBackendFactory(), nullptr, pc.inputs);
  auto got = runOnce(in, cpuBackendFactory(), nullptr, pc.inputs);
  expectSameBits(got[0], want[0], GetParam().name());
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaKernelAlias, ::testing::ValuesIn(aliasCases(allCases())),
                         [](const ::testing::TestParamInfo<AliasCase> &info) {
                           return info.param.name();
                         });

TEST(CudaKernelCoverage, EveryOpHasACudaKernel) {
  std::vector<std::string> missing;
  for (const ir::OpInfo &info : ir::allOps())
    if (!info.has(ir::kCollective) && !cudaKernels().find(info.name)) // collectives: instructions
      missing.push_back(info.name);
  EXPECT_TRUE(missing.empty()) << "no cuda kernel for " << ::testing::PrintToString(missing);
}

/// Runs `p` once on the GPU with `inputs` (raw bytes, one per plan input) and
/// reads the output into `out`; returns the message of the UserError the
/// read throws ("" when none).
std::string readError(const plan::Plan &p, Executor &exec,
                      const std::vector<std::vector<uint8_t>> &inputs, std::vector<float> &out) {
  for (size_t i = 0; i < inputs.size(); ++i)
    exec.write(p.inputs[i], inputs[i].data(), inputs[i].size());
  exec.step();
  out.assign(size_t(p.outputs[0].numElements()), 0.f);
  try {
    exec.read(p.outputs[0], out.data(), out.size() * 4);
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

template <class T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void expectHas(const std::string &text, const std::string &part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(CudaKernelErrors, LabelOutOfRangeIsReportedWhenDataIsRead) {
  MPC_REQUIRE_GPU();
  plan::Plan p = test::singleOpPlan(
      "softmax_cross_entropy",
      {{"ignore_index", int64_t(-100)}, {"reduction", std::string("mean")}},
      {{plan::DType::F32, {3, 4}}, {plan::DType::I32, {3}}},
                                    {plan::DType::F32, {}});
  CudaRun run = prepareCudaRun(p, {});
  Executor exec(p, run.factory, std::move(run.transport));
  std::vector<float> logits(12, 0.f), loss;
  // Step 1 is clean; step 2 has two bad labels: the first row is reported.
  EXPECT_EQ(readError(p, exec, {bytesOf(logits), bytesOf(std::vector<int32_t>{0, 3, 1})}, loss),
            "");
  std::string e =
      readError(p, exec, {bytesOf(logits), bytesOf(std::vector<int32_t>{0, 7, -2})}, loss);
  expectHas(e, "gpu:0: instruction 0 (softmax_cross_entropy 'out')");
  expectHas(e, "label 7 out of range [0, 4) at row 1 in step 2");
}

TEST(CudaKernelErrors, EmbeddingIdOutOfRangeIsReportedAndGivesAZeroRow) {
  MPC_REQUIRE_GPU();
  plan::Plan p = test::singleOpPlan("embedding", {},
                                    {{plan::DType::I32, {2, 3}}, {plan::DType::F32, {4, 2}}},
                                    {plan::DType::F32, {2, 3, 2}});
  CudaRun run = prepareCudaRun(p, {});
  Executor exec(p, run.factory, std::move(run.transport));
  std::vector<float> table = {1, 2, 3, 4, 5, 6, 7, 8}, out;
  std::string e = readError(
      p, exec, {bytesOf(std::vector<int32_t>{0, 1, 9, 2, -1, 3}), bytesOf(table)}, out);
  expectHas(e, "gpu:0: instruction 0 (embedding 'out')");
  expectHas(e, "embedding id 9 at ids[0,2] out of range [0, 4) in step 1");
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 0, 0, 5, 6, 0, 0, 7, 8}));
}

TEST(CudaKernelErrors, EmbeddingGradReportsABadIdAndSkipsIt) {
  MPC_REQUIRE_GPU();
  plan::Plan p = test::singleOpPlan("embedding_grad", {{"num_embeddings", int64_t(4)}},
                                    {{plan::DType::I32, {3}}, {plan::DType::F32, {3, 2}}},
                                    {plan::DType::F32, {4, 2}});
  CudaRun run = prepareCudaRun(p, {});
  Executor exec(p, run.factory, std::move(run.transport));
  std::vector<float> dy = {1, 2, 3, 4, 5, 6}, out;
  std::string e =
      readError(p, exec, {bytesOf(std::vector<int32_t>{3, -5, 3}), bytesOf(dy)}, out);
  expectHas(e, "embedding id -5 at ids[1] out of range [0, 4) in step 1");
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 0, 0, 0, 6, 8}));
}

} // namespace
} // namespace mpc::runtime::cuda
