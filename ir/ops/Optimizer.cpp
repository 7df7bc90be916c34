//===- ir/ops/Optimizer.cpp - the Optimizer ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addOptimizerOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
