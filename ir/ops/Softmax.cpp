//===- ir/ops/Softmax.cpp - the Softmax ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addSoftmaxOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
