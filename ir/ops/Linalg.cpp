//===- ir/ops/Linalg.cpp - the Linalg ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addLinalgOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
