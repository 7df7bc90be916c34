//===- ir/ops/Device.cpp - copy's and stop_gradient's rules --------------===//
//
// The gradient rules of copy (a copy back to the operand's device) and
// stop_gradient (no gradient), and their float64 reference kernel, the
// identity. The schemas are in ops/Device.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

void identityRef(RefOps o, const AttrMap &, RefTensor &out) { out.data = o[0]->data; }

std::vector<Node *> gradCopy(Builder &b, const Node &n, Node *dy) {
  const std::string &src = n.inputs[0]->device;
  return {b.copyTo(dy, src)};
}

std::vector<Node *> gradStopGradient(Builder &, const Node &, Node *) { return {nullptr}; }

} // namespace

void addDeviceRules(RuleTable &t) {
  t[size_t(OpKind::Copy)] = {gradCopy, identityRef};
  t[size_t(OpKind::StopGradient)] = {gradStopGradient, identityRef};
}

} // namespace mpc::ir
