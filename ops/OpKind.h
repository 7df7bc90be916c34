//===- ops/OpKind.h - the op enumeration, expanded from OpList.def -------===//
#pragma once

#include <cstddef>

namespace mpc::ops {

enum class OpKind : unsigned {
#define MPC_OP(Kind, Name, Family) Kind,
#include "ops/OpList.def"
};

constexpr size_t kNumOps = 0
#define MPC_OP(Kind, Name, Family) +1
#include "ops/OpList.def"
    ;

} // namespace mpc::ops
