//===- ir/ops/Device.cpp - the Device ops (placeholder) ---===//
#include "ir/OpInfo.h"

namespace mpc::ir {
void addDeviceOps(std::vector<OpInfo> &) {}
} // namespace mpc::ir
