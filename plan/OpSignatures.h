//===- plan/OpSignatures.h - kernels against the op schemas ------===//
//
// A kernel instruction names an op; what the op takes and gives is its
// schema (ops/OpSchema.h), compiled into every reader of plans. The plan
// also carries the schema's signature of every op its kernels name
// (Plan::ops: operand counts, declared attributes with their kinds), so that
// the file describes itself; the verifier checks that table against the
// schemas (a plan written by another version of mpc is refused), then each
// kernel instruction against its op's schema: operand count, attributes, and
// the shape rule run over the operand buffers' types, whose result must be
// the result buffer's type. What passes needs no check in a backend.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/OpSchema.h"
#include "plan/Plan.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mpc::plan {

/// "bool", "int", "float", "string", "ints": the kinds as plan.bin writes them.
const char *attrKindName(AttrKind k);

/// The op table's entry for `op`: what codegen writes into Plan::ops.
OpSignature signatureOf(const ops::OpSchema &op);

/// Why the plan's entry `sig` differs from this build's schema of the op
/// (an unknown op, other operand counts or attributes), or nullopt.
std::optional<std::string> checkSignature(const OpSignature &sig);

/// Problems of one kernel instruction against its op's schema, as
/// ("/attrs/shape", "message") pairs relative to the instruction.
std::vector<std::pair<std::string, std::string>> checkKernel(const Instr &in,
                                                             const ops::OpSchema &op,
                                                             const DeviceProgram &device);

} // namespace mpc::plan
