//===- ir/OpKind.h - the op enumeration, expanded from OpList.def --------===//
#pragma once

#include <cstddef>

namespace mpc::ir {

enum class OpKind : unsigned {
#define MPC_OP(Kind, Name, Family) Kind,
#include "ir/OpList.def"
};

constexpr size_t kNumOps = 0
#define MPC_OP(Kind, Name, Family) +1
#include "ir/OpList.def"
    ;

} // namespace mpc::ir
