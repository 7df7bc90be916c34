//===- ir/Layouts.h - tensor-parallel layouts, proven ---------------------===//
//
// After tensor-parallel (passes/TensorParallel.cpp) every member of a
// tensor-parallel group records its layout (Node::spmd). This re-derives
// each one from its operands' and the op's sharding rule (ops/Layout.h),
// so the verifier proves, for any graph read or made:
//   * no op reads a layout its rule does not take: in particular no
//     non-linear op reads a partial sum (P), and an optimizer update reads
//     its gradient in its parameter's layout, so replicated parameters get
//     the same update on every device and cannot diverge;
//   * every partial sum is reduced exactly once before it is used whole: a
//     reduction takes P only (reducing an R value would multiply it by t),
//     and the loss, the outputs and every copy out of the group read R;
//   * each redistribution is what it claims (a slice keeps its device's
//     part; a zero-filled partial keeps the value on device 0 only);
//   * the members of a value are one per device, each index once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace mpc::ir {

struct LayoutProblem {
  const Node *node;
  std::string message;
};

/// Every problem with the graph's layouts (none for a graph without).
std::vector<LayoutProblem> checkLayouts(const Graph &g);

} // namespace mpc::ir
