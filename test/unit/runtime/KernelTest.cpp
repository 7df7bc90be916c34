//===- test/unit/runtime/KernelTest.cpp - CPU kernels vs the reference --===//
//
// Every case of the op test-case table (test/unit/ir/OpCases.h) runs through
// the CPU backend as a one-instruction plan and is compared with the op
// record's float64 reference kernel on the same (float32-exact) inputs: the
// result and, for optimizer ops, every operand updated in place. A coverage
// test fails when an op of ops/OpList.def has no CPU kernel.
//
// Alias safety: every case of an op that may run in place
// (ir::OpInfo::inPlaceOperands) runs again with the result written into the
// aliased operand's buffer, and must equal the out-of-place result bit for
// bit; the compiler relies on it (codegen/InPlace.cpp).
//
//===----------------------------------------------------------------------===//
#include "ir/OpInfo.h"
#include "runtime/Channel.h"
#include "runtime/cpu/CpuDevice.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"
#include "test/unit/runtime/SingleKernelPlan.h"
#include "test/unit/runtime/TensorBytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mpc::runtime {
namespace {

using namespace mpc::ir::opcases;

/// The shared one-kernel plan (SingleKernelPlan.h); it takes the op table's
/// types as they are.
using test::singleKernelPlan;

using test::bytesOf;
using test::valuesOf;

void expectClose(const std::vector<double> &got, const std::vector<double> &want, double tol,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
      continue;
    }
    if (got[i] == want[i]) continue; // infinities too
    EXPECT_LE(errorOf(got[i], want[i]), tol)
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

class CpuKernelCase : public ::testing::TestWithParam<const OpCase *> {};

TEST_P(CpuKernelCase, MatchesReference) {
  const OpCase &c = *GetParam();
  const ir::OpInfo &info = ir::opInfo(c.kind);
  ir::AttrMap attrs = fullAttrs(c);
  ir::TensorType result = resultType(c);
  std::vector<ir::RefTensor> inputs = makeInputs(c);
  std::vector<ir::RefTensor> refInputs = inputs;
  ir::RefTensor want = runReference(c, refInputs);

  plan::Plan p = singleKernelPlan(info.name, attrs, c.operands, result);
  cpu::CpuDevice dev;
  dev.load(p, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<uint8_t> bytes = bytesOf(inputs[i], c.operands[i].dtype);
    dev.upload(uint32_t(i), bytes.data(), bytes.size());
  }
  ChannelTransport transport(std::vector<uint32_t>{});
  dev.runStep(transport, 1);

  const plan::Buffer &outBuf = p.devices[0].buffers.back();
  std::vector<uint8_t> got(outBuf.bytes);
  dev.download(outBuf.id, got.data(), got.size());
  expectClose(valuesOf(got, outBuf.dtype), want.data, c.tol, c.name() + " result");
  for (int m : info.mutatedOperands) {
    if (size_t(m) >= inputs.size()) continue;
    const plan::Buffer &b = p.devices[0].buffers[size_t(m)];
    std::vector<uint8_t> bytes(b.bytes);
    dev.download(b.id, bytes.data(), bytes.size());
    expectClose(valuesOf(bytes, b.dtype), refInputs[size_t(m)].data, c.tol,
                c.name() + " operand " + std::to_string(m) + " (updated in place)");
  }
}

std::vector<const OpCase *> allCases() {
  std::vector<const OpCase *> out;
  for (const OpCase &c : allOpCases()) out.push_back(&c);
  return out;
}

std::string caseName(const ::testing::TestParamInfo<const OpCase *> &info) {
  std::string n = info.param->name();
  for (char &ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuKernelCase, ::testing::ValuesIn(allCases()), caseName);

/// bf16 and f16: the kernels run on f32 copies of the operands and round
/// the result (runtime/cpu/LowPrecision.h), as the reference does.
std::vector<const OpCase *> lowCases() {
  std::vector<const OpCase *> out;
  for (const OpCase &c : lowPrecisionCases()) out.push_back(&c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, CpuKernelCase, ::testing::ValuesIn(lowCases()), caseName);

/// The bytes of buffer `read` after one step of `p` on `inputs`.
std::vector<uint8_t> runForBytes(const plan::Plan &p, const OpCase &c,
                                 const std::vector<ir::RefTensor> &inputs, uint32_t read) {
  cpu::CpuDevice dev;
  dev.load(p, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<uint8_t> bytes = bytesOf(inputs[i], c.operands[i].dtype);
    dev.upload(uint32_t(i), bytes.data(), bytes.size());
  }
  ChannelTransport transport(std::vector<uint32_t>{});
  dev.runStep(transport, 1);
  std::vector<uint8_t> got(p.devices[0].buffers[read].bytes);
  dev.download(read, got.data(), got.size());
  return got;
}

class CpuKernelAlias : public ::testing::TestWithParam<AliasCase> {};

TEST_P(CpuKernelAlias, InPlaceMatchesOutOfPlaceBitForBit) {
  const OpCase &c = *GetParam().c;
  size_t k = size_t(GetParam().operand);
  const ir::OpInfo &info = ir::opInfo(c.kind);
  std::vector<ir::RefTensor> inputs = makeInputs(c);
  plan::Plan out = singleKernelPlan(info.name, fullAttrs(c), c.operands, resultType(c));
  plan::Plan in = test::inPlaceVariant(out, k);
  std::vector<uint8_t> want = runForBytes(out, c, inputs, out.devices[0].instrs[0].output);
  std::vector<uint8_t> got = runForBytes(in, c, inputs, in.devices[0].instrs[0].output);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); i += 4)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
        << c.name() << " in place on operand " << k << ": element " << i / 4 << " differs";
}

/// Sizes past the vector loops' widths and gelu's 256-element blocks, odd so
/// that every loop also runs its remainder: aliasing bugs in vectorised code
/// show only there.
const std::vector<OpCase> &largeAliasCases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> cs;
    const ir::TensorType t{ir::DType::F32, {3, 347}};
    InputSpec positive;
    positive.lo = 0.25;
    positive.hi = 3.0;
    auto add = [&](ir::OpKind k, int arity, ir::AttrMap attrs = {}, std::vector<InputSpec> in = {},
                   std::string label = "large") {
      OpCase c;
      c.kind = k;
      c.label = std::move(label);
      c.operands.assign(size_t(arity), t);
      c.attrs = std::move(attrs);
      c.inputs = std::move(in);
      cs.push_back(std::move(c));
    };
    using K = ir::OpKind;
    for (K k : {K::Neg, K::Relu, K::Sigmoid, K::Tanh, K::Gelu, K::Exp}) add(k, 1);
    add(K::Scale, 1, {{"value", 0.75}});
    add(K::Log, 1, {}, {positive});
    add(K::Gelu, 1, {{"approximate", std::string("tanh")}}, {}, "large_tanh");
    add(K::Dropout, 1, {{"p", 0.3}, {"key", std::string("d")}, {"offset", int64_t(5)}});
    for (K k : {K::Add, K::Sub, K::Mul, K::ReluGrad, K::GeluGrad, K::TanhGrad, K::SigmoidGrad})
      add(k, 2);
    add(K::Div, 2, {}, {{}, positive});
    add(K::GeluGrad, 2, {{"approximate", std::string("tanh")}}, {}, "large_tanh");
    return cs;
  }();
  return cases;
}

std::vector<AliasCase> allAliasCases() {
  std::vector<const OpCase *> cases = allCases();
  for (const OpCase &c : largeAliasCases()) cases.push_back(&c);
  return aliasCases(cases);
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuKernelAlias, ::testing::ValuesIn(allAliasCases()),
                         [](const ::testing::TestParamInfo<AliasCase> &info) {
                           std::string n = info.param.name();
                           for (char &ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

/// An op declared in-place-able with no case that exercises the aliasing
/// would be an unproven promise.
TEST(CpuKernels, EveryInPlaceOpHasAnAliasCase) {
  std::vector<AliasCase> cases = allAliasCases();
  for (const ir::OpInfo &info : ir::allOps())
    for (int k : info.inPlaceOperands) {
      bool found = std::any_of(cases.begin(), cases.end(), [&](const AliasCase &a) {
        return a.c->kind == info.kind && a.operand == k;
      });
      EXPECT_TRUE(found) << info.name << " may run in place on operand " << k
                         << " but no op case has that operand with the result's type";
    }
}

TEST(CpuKernels, EveryOpHasAKernel) {
  for (const ir::OpInfo &info : ir::allOps()) {
    if (info.has(ir::kCollective)) continue; // collective instructions, not kernels
    EXPECT_NE(cpu::cpuKernels().find(info.name), nullptr) << "no CPU kernel for " << info.name;
  }
}

TEST(CpuKernels, EveryKernelIsAnOp) {
  for (const std::string &name : cpu::cpuKernels().names())
    EXPECT_NE(ir::lookupOp(name), nullptr) << "CPU kernel for unknown op " << name;
}

TEST(CpuKernels, UnknownOpRejectedAtLoad) {
  plan::Plan p = singleKernelPlan("expp", {}, {{ir::DType::F32, {2}}}, {ir::DType::F32, {2}});
  cpu::CpuDevice dev;
  try {
    dev.load(p, 0);
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.where(), "device cpu:0, instruction 0 (expp 'out')");
    EXPECT_EQ(e.message(), "no cpu kernel for op 'expp' (did you mean 'exp'?)");
  }
}

TEST(CpuKernels, LabelOutOfRangeIsUserError) {
  plan::Plan p = singleKernelPlan("softmax_cross_entropy",
                                  {{"ignore_index", int64_t(-100)},
                                   {"reduction", std::string("mean")}},
                                  {{ir::DType::F32, {2, 3}}, {ir::DType::I32, {2}}},
                                  {ir::DType::F32, {}});
  cpu::CpuDevice dev;
  dev.load(p, 0);
  std::vector<float> logits(6, 0.5f);
  std::vector<int32_t> labels = {1, 3};
  dev.upload(0, logits.data(), 24);
  dev.upload(1, labels.data(), 8);
  ChannelTransport transport(std::vector<uint32_t>{});
  try {
    dev.runStep(transport, 1);
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "label 3 out of range [0, 3) at row 1");
  }
}

} // namespace
} // namespace mpc::runtime
