//===- ir/ops/Elementwise.cpp - the Elementwise ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addElementwiseOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
