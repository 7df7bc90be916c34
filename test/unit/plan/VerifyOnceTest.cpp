//===- test/unit/plan/VerifyOnceTest.cpp - bad kernels stop at load -----===//
//
// Verify once, trust after (docs/architecture.md): the backends rely on what
// plan::verifyPlan proved without re-checking it. This test holds the
// verifier to that for every op of the op list: a valid one-kernel plan of
// the op (its first case in test/unit/ir/OpCases.cpp) loads, and each
// mutation of a kernel field the verifier checks (operand count, operand
// and result ids, each declared attribute missing or of the wrong kind, an
// undeclared attribute, an op the plan's table does not list) is rejected
// while plan.bin is read, by the verifier, before any backend sees it.
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

using Mutation = std::pair<std::string, std::function<void(plan::Instr &)>>;

/// A value of another kind than `type` that the verifier must refuse (a
/// float attribute accepts an integer, so it gets a string).
plan::AttrValue wrongKind(ir::AttrType type) {
  return type == ir::AttrType::String ? plan::AttrValue(int64_t(1))
                                      : plan::AttrValue(std::string("x"));
}

std::vector<Mutation> mutationsOf(const ir::OpInfo &info) {
  std::vector<Mutation> m;
  if (info.minArity > 0)
    m.push_back({"one operand fewer than it needs", [&info](plan::Instr &in) {
                   in.inputs.resize(size_t(info.minArity) - 1);
                 }});
  m.push_back({"one operand more than it takes", [&info](plan::Instr &in) {
                 in.inputs.resize(size_t(info.maxArity()) + 1, 0);
               }});
  if (info.minArity > 0)
    m.push_back({"an operand id past the buffers", [](plan::Instr &in) { in.inputs[0] = 999; }});
  m.push_back({"a result id past the buffers", [](plan::Instr &in) { in.output = 999; }});
  for (const ir::AttrSpec &a : info.attrs) {
    std::string name = a.name;
    m.push_back({"without '" + name + "'", [name](plan::Instr &in) { in.attrs.erase(name); }});
    m.push_back({"'" + name + "' of the wrong kind", [name, type = a.type](plan::Instr &in) {
                   in.attrs[name] = wrongKind(type);
                 }});
  }
  m.push_back({"an undeclared attribute", [](plan::Instr &in) {
                 in.attrs["no_such_attribute"] = int64_t(1);
               }});
  m.push_back({"an op the plan's table does not list", [](plan::Instr &in) {
                 in.op = "no_such_op";
               }});
  return m;
}

/// Writes `p` as plan.bin bytes and reads them back: the load path.
plan::Plan load(const plan::Plan &p) {
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  return plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
}

TEST(VerifyOnce, EveryOpsMutatedKernelIsRejectedAtLoad) {
  size_t ops = 0, rejected = 0;
  for (const ir::OpInfo &info : ir::allOps()) {
    SCOPED_TRACE(info.name);
    std::vector<const ir::opcases::OpCase *> cases = ir::opcases::casesFor(info.kind);
    ASSERT_FALSE(cases.empty()) << "no case for '" << info.name << "' in OpCases.cpp";
    const ir::opcases::OpCase &c = *cases.front();
    plan::Plan valid = test::singleKernelPlan(info.name, ir::opcases::fullAttrs(c), c.operands,
                                              ir::opcases::resultType(c));
    codegen::fillOpTable(valid);
    ASSERT_NO_THROW(load(valid)) << "the unmutated plan of '" << info.name << "' must load";
    ++ops;
    for (const auto &[what, mutate] : mutationsOf(info)) {
      SCOPED_TRACE(what);
      plan::Plan bad = valid;
      mutate(bad.devices[0].instrs[0]);
      try {
        load(bad);
        ADD_FAILURE() << "'" << info.name << "' with " << what << " was accepted";
      } catch (const UserError &) {
        ++rejected; // by the reader, at load: no backend has seen the plan
      }
    }
  }
  EXPECT_EQ(ops, ir::kNumOps);
  EXPECT_GT(rejected, 4 * ops);
}

} // namespace
} // namespace mpc
