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

/// The op's JSON and kernel name ("matmul").
constexpr const char *opName(OpKind kind) {
  constexpr const char *kNames[] = {
#define MPC_OP(Kind, Name, Family) Name,
#include "ops/OpList.def"
  };
  return kNames[size_t(kind)];
}

} // namespace mpc::ops
