//===- runtime/plan/OpSignatures.h - what the verifier knows of each op -===//
//
// The runtime may not include ir/, so the plan verifier carries its own copy
// of the op facts it checks: operand counts, every declared attribute with
// its type (codegen writes all of them), and shape rules for the ops whose
// attributes describe a shape. A unit test (test/unit/codegen) compares this
// table with the op table of ir/ so the two cannot drift apart.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan.h"

#include <string>
#include <utility>
#include <vector>

namespace mpc::plan {

enum class AttrKind : uint8_t { Bool, Int, Float, String, Ints };

struct OpSignature {
  const char *name;
  int minInputs, maxInputs;
  std::vector<std::pair<const char *, AttrKind>> attrs; ///< every declared attribute
};

/// Every op a plan may name, in ir/OpList.def order.
const std::vector<OpSignature> &opSignatures();
/// The signature of `op`, or nullptr (an op unknown here is left to the
/// backend's kernel registry, which suggests the closest name).
const OpSignature *findOpSignature(const std::string &op);

/// Problems of one kernel instruction against its signature, as
/// ("/attrs/shape", "message") pairs relative to the instruction.
std::vector<std::pair<std::string, std::string>> checkKernel(const Instr &in,
                                                             const DeviceProgram &device);

} // namespace mpc::plan
