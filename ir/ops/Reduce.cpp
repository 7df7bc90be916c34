//===- ir/ops/Reduce.cpp - the Reduce ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addReduceOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
