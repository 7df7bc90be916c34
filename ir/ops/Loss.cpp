//===- ir/ops/Loss.cpp - the Loss ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addLossOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
