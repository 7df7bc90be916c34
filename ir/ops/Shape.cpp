//===- ir/ops/Shape.cpp - the Shape ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addShapeOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
