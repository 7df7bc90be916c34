//===- plan/OpSignatures.h - kernels against the plan's op table -===//
//
// A plan carries the op table's facts about every op its kernels name
// (Plan::ops: operand counts, declared attributes with their kinds), written
// by codegen from the op records of ir/. The verifier checks each kernel
// instruction against its op's entry, and the shapes of the ops whose
// attributes state a shape against their rules, so attributes and buffers
// cannot disagree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <string>
#include <utility>
#include <vector>

namespace mpc::plan {

/// "bool", "int", "float", "string", "ints": the kinds as plan.bin writes them.
const char *attrKindName(AttrKind k);

/// The plan's entry for `op`, or nullptr.
const OpSignature *findOpSignature(const Plan &plan, const std::string &op);

/// Problems of one kernel instruction against its op's entry, as
/// ("/attrs/shape", "message") pairs relative to the instruction.
std::vector<std::pair<std::string, std::string>> checkKernel(const Instr &in,
                                                             const OpSignature &sig,
                                                             const DeviceProgram &device);

} // namespace mpc::plan
