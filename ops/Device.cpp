//===- ops/Device.cpp - copy and stop_gradient ---------------------------===//
//
// Identity ops with a meaning for the compiler. copy moves its operand to the
// node's own device (insert-copies creates them; every cross-device edge goes
// through one); its gradient is a copy back to the source device, so the
// backward graph transfers gradients as explicitly as the forward graph
// transfers activations. stop_gradient blocks gradient flow. Both accept any
// dtype (integer labels travel between devices too). Their gradient rules
// and reference kernels are in ir/ops/Device.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

void addDeviceSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Copy, "copy", "Device",
                            "x transferred to the node's device (identity on values)", {"x"});
    r.precision = Precision::Follow;
    r.infer = [](TypeOps o, const AttrMap &) { return o[0]; };
    r.flops = noFlops;
    r.traits = kTransfer;
    // Within a group, an identity; between groups, passes/TensorParallel.cpp
    // decides what crosses.
    r.shard = [](const ShardQuery &q) { return elementwiseRule(q, Linearity::Sum); };
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::StopGradient, "stop_gradient", "Device",
                            "x, through which no gradient flows", {"x"});
    r.precision = Precision::Follow;
    r.infer = [](TypeOps o, const AttrMap &) { return o[0]; };
    r.flops = noFlops;
    r.traits = kStopsGradient;
    r.shard = [](const ShardQuery &q) { return elementwiseRule(q, Linearity::Sum); };
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
