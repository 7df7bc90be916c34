//===- ir/ops/Device.cpp - copy and stop_gradient ------------------------===//
//
// Identity ops with a meaning for the compiler. copy moves its operand to the
// node's own device (insert-copies creates them; every cross-device edge goes
// through one); its gradient is a copy back to the source device, so the
// backward graph transfers gradients as explicitly as the forward graph
// transfers activations. stop_gradient blocks gradient flow. Both accept any
// dtype (integer labels travel between devices too).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

void identityRef(RefOps o, const AttrMap &, RefTensor &out) { out.data = o[0]->data; }

} // namespace

void addDeviceOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::Copy, "copy", "Device",
                      "x transferred to the node's device (identity on values)", {"x"});
    r.infer = [](TypeOps o, const AttrMap &) { return o[0]; };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      const std::string &src = n.inputs[0]->device;
      return {b.copyTo(dy, src)};
    };
    r.reference = identityRef;
    r.flops = noFlops;
    r.traits = kTransfer;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::StopGradient, "stop_gradient", "Device",
                      "x, through which no gradient flows", {"x"});
    r.infer = [](TypeOps o, const AttrMap &) { return o[0]; };
    r.grad = [](Builder &, const Node &, Node *) -> std::vector<Node *> { return {nullptr}; };
    r.reference = identityRef;
    r.flops = noFlops;
    r.traits = kStopsGradient;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
