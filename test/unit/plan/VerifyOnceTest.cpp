//===- test/unit/plan/VerifyOnceTest.cpp - bad kernels stop at load -----===//
//
// Verify once, trust after (docs/architecture.md): the backends rely on what
// plan::verifyPlan proved without re-checking it. This test holds the
// verifier to that for every op of the op list: a valid one-kernel plan of
// the op (its first case in test/unit/ir/OpCases.cpp) loads, and each
// mutation of a kernel field the verifier checks (operand count, operand
// and result ids, each declared attribute missing or of the wrong kind, an
// undeclared attribute, an op the plan's table does not list, a result
// buffer of another shape or element type than the op's shape rule gives,
// an operand of another element type) is rejected while plan.bin is read,
// by the verifier, with the instruction named, before any backend sees it.
// The op table a plan carries must equal the op schemas: each field of each
// entry, mutated, is rejected too.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"
#include "ir/OpInfo.h"
#include "plan/PlanIO.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"
#include "test/unit/runtime/SingleKernelPlan.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mpc {
namespace {

using Mutation = std::pair<std::string, std::function<void(plan::Plan &)>>;

/// The other element type.
/// Another element type of the same size, so only the type is wrong.
plan::DType otherDType(plan::DType t) {
  switch (t) {
  case plan::DType::F32: return plan::DType::I32;
  case plan::DType::I32: return plan::DType::F32;
  case plan::DType::BF16: return plan::DType::F16;
  case plan::DType::F16: return plan::DType::BF16;
  }
  return t;
}

/// Sets buffer `id` of the one device and the tensor ref naming it (so the
/// refs still agree with their buffers and only the kernel can object).
void retype(plan::Plan &p, uint32_t id, const std::function<void(plan::Buffer &)> &edit) {
  plan::Buffer &b = p.devices[0].buffers.at(id);
  edit(b);
  for (std::vector<plan::TensorRef> *refs : {&p.inputs, &p.outputs})
    for (plan::TensorRef &r : *refs)
      if (r.buffer == id) r.dtype = b.dtype, r.shape = b.shape;
}

/// A value of another kind than `type` that the verifier must refuse (a
/// float attribute accepts an integer, so it gets a string).
plan::AttrValue wrongKind(ir::AttrType type) {
  return type == ir::AttrType::String ? plan::AttrValue(int64_t(1))
                                      : plan::AttrValue(std::string("x"));
}

std::vector<Mutation> mutationsOf(const ir::OpInfo &info) {
  std::vector<Mutation> m;
  auto instr = [](plan::Plan &p) -> plan::Instr & { return p.devices[0].instrs[0]; };
  if (info.minArity > 0)
    m.push_back({"one operand fewer than it needs", [&info, instr](plan::Plan &p) {
                   instr(p).inputs.resize(size_t(info.minArity) - 1);
                 }});
  m.push_back({"one operand more than it takes", [&info, instr](plan::Plan &p) {
                 instr(p).inputs.resize(size_t(info.maxArity()) + 1, 0);
               }});
  if (info.minArity > 0)
    m.push_back({"an operand id past the buffers",
                 [instr](plan::Plan &p) { instr(p).inputs[0] = 999; }});
  m.push_back({"a result id past the buffers", [instr](plan::Plan &p) { instr(p).output = 999; }});
  for (const ir::AttrSpec &a : info.attrs) {
    std::string name = a.name;
    m.push_back({"without '" + name + "'",
                 [name, instr](plan::Plan &p) { instr(p).attrs.erase(name); }});
    m.push_back({"'" + name + "' of the wrong kind", [name, type = a.type, instr](plan::Plan &p) {
                   instr(p).attrs[name] = wrongKind(type);
                 }});
  }
  m.push_back({"an undeclared attribute", [instr](plan::Plan &p) {
                 instr(p).attrs["no_such_attribute"] = int64_t(1);
               }});
  m.push_back({"an op the plan's table does not list",
               [instr](plan::Plan &p) { instr(p).op = "no_such_op"; }});
  // The shape rule over the buffers: the result must be what the op gives.
  m.push_back({"a result buffer with one more axis", [instr](plan::Plan &p) {
                 retype(p, instr(p).output,
                        [](plan::Buffer &b) { b.shape.insert(b.shape.begin(), 1); });
               }});
  m.push_back({"a result buffer of the other element type", [instr](plan::Plan &p) {
                 retype(p, instr(p).output, [](plan::Buffer &b) { b.dtype = otherDType(b.dtype); });
               }});
  // An op that takes either element type gives a result of its operand's,
  // so this too breaks the result's type.
  if (info.minArity > 0)
    m.push_back({"operand 0 of the other element type", [instr](plan::Plan &p) {
                   retype(p, instr(p).inputs[0],
                          [](plan::Buffer &b) { b.dtype = otherDType(b.dtype); });
                 }});
  return m;
}

/// Mutations of the plan's op table entry for the op.
std::vector<Mutation> tableMutations() {
  auto entry = [](plan::Plan &p) -> plan::OpSignature & { return p.ops.at(0); };
  return {
      {"an op table entry needing one operand more",
       [entry](plan::Plan &p) { ++entry(p).minInputs, ++entry(p).maxInputs; }},
      {"an op table entry taking one operand more",
       [entry](plan::Plan &p) { ++entry(p).maxInputs; }},
      {"an op table entry with an extra attribute",
       [entry](plan::Plan &p) { entry(p).attrs.emplace_back("zz_extra", plan::AttrKind::Int); }},
      {"an op table entry with the first attribute of another kind",
       [entry](plan::Plan &p) {
         auto &attrs = entry(p).attrs;
         if (attrs.empty()) attrs.emplace_back("zz_extra", plan::AttrKind::Int);
         else attrs[0].second = attrs[0].second == plan::AttrKind::Bool ? plan::AttrKind::Int
                                                                      : plan::AttrKind::Bool;
       }},
  };
}

/// Writes `p` as plan.bin bytes and reads them back: the load path.
plan::Plan load(const plan::Plan &p) {
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  return plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
}

TEST(VerifyOnce, EveryOpsMutatedKernelIsRejectedAtLoad) {
  size_t ops = 0, rejected = 0;
  for (const ir::OpInfo &info : ir::allOps()) {
    if (info.has(ir::kCollective)) continue; // instructions of their own (CollectiveTest.cpp)
    SCOPED_TRACE(info.name);
    std::vector<const ir::opcases::OpCase *> cases = ir::opcases::casesFor(info.kind);
    ASSERT_FALSE(cases.empty()) << "no case for '" << info.name << "' in OpCases.cpp";
    const ir::opcases::OpCase &c = *cases.front();
    plan::Plan valid = test::singleKernelPlan(info.name, ir::opcases::fullAttrs(c), c.operands,
                                              ir::opcases::resultType(c));
    codegen::fillOpTable(valid);
    ASSERT_NO_THROW(load(valid)) << "the unmutated plan of '" << info.name << "' must load";
    ++ops;
    auto expectRejected = [&](const Mutation &mutation, const std::string &where) {
      SCOPED_TRACE(mutation.first);
      plan::Plan bad = valid;
      mutation.second(bad);
      try {
        load(bad);
        ADD_FAILURE() << "'" << info.name << "' with " << mutation.first << " was accepted";
      } catch (const UserError &e) {
        // By the reader, at load, naming what it refused: no backend has
        // seen the plan.
        EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
        ++rejected;
      }
    };
    for (const Mutation &mutation : mutationsOf(info))
      expectRejected(mutation, "/devices/0/instrs/0");
    for (const Mutation &mutation : tableMutations()) expectRejected(mutation, "/ops/0");
  }
  size_t kernels = 0;
  for (const ir::OpInfo &info : ir::allOps()) kernels += !info.has(ir::kCollective);
  EXPECT_EQ(ops, kernels);
  EXPECT_GT(rejected, 10 * ops);
}

/// The message of the UserError loading `p` throws, or "" when it loads.
std::string loadError(plan::Plan p) {
  codegen::fillOpTable(p);
  try {
    load(p);
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

/// The shape rules check attribute values too, so a plan with values the
/// compiler never writes is refused at load, by the rule's own message.
TEST(VerifyOnce, ShapeRulesRejectBadValuesAtLoad) {
  EXPECT_NE(loadError(test::singleKernelPlan(
                          "matmul", {{"transpose_a", false}, {"transpose_b", false}},
                          {{ir::DType::F32, {2, 3}}, {ir::DType::F32, {2, 3}}},
                          {ir::DType::F32, {2, 3}}))
                .find("/devices/0/instrs/0/inputs: shape mismatch: f32[2,3] x f32[2,3]"),
            std::string::npos);
  EXPECT_NE(loadError(test::singleKernelPlan(
                          "dropout",
                          {{"p", 1.0}, {"key", std::string("d")}, {"offset", int64_t(0)},
                           {"parts", int64_t(1)}, {"part", int64_t(0)}, {"inner", int64_t(1)}},
                          {{ir::DType::F32, {4}}}, {ir::DType::F32, {4}}))
                .find("dropout p must be in [0, 1), got 1.000000"),
            std::string::npos);
  EXPECT_NE(loadError(test::singleKernelPlan(
                          "softmax_cross_entropy",
                          {{"ignore_index", int64_t(-100)}, {"reduction", std::string("none")}},
                          {{ir::DType::F32, {2, 3}}, {ir::DType::I32, {2}}}, {ir::DType::F32, {}}))
                .find("reduction must be \"mean\" or \"sum\", got \"none\""),
            std::string::npos);
  EXPECT_NE(loadError(test::singleKernelPlan(
                          "batch_norm_update", {{"momentum", 1.5}, {"axis", int64_t(1)}},
                          {{ir::DType::F32, {3}}, {ir::DType::F32, {3}}, {ir::DType::F32, {2, 3}}},
                          {ir::DType::F32, {3}}))
                .find("momentum must be in [0, 1], got 1.5"),
            std::string::npos);
}

/// An integer given for a float attribute is a number: the kernels read it
/// as one, and so does the shape rule the verifier runs.
TEST(VerifyOnce, IntegerForAFloatAttributeLoads) {
  EXPECT_EQ(loadError(test::singleKernelPlan("scale", {{"value", int64_t(2)}},
                                             {{ir::DType::F32, {4}}}, {ir::DType::F32, {4}})),
            "");
}

} // namespace
} // namespace mpc
