//===- passes/Pipelines.cpp - the default training pipeline -------------===//
//
// The pipeline `mpc compile` runs, as a readable sequence:
//   1. infer-shapes   types for every node (the reader already did; cheap)
//   2. canonicalize   drop dead nodes, fold identity reshapes/transposes
//   3. place          a concrete device for every node
//   4. insert-copies  explicit, deduplicated copies on cross-device edges
// and, when the model has a loss:
//   5. autodiff       the backward graph (copies' gradients are copies back)
//   6. insert-copies  copies for backward edges that cross devices
//   7. optimize-step  optimizer state and in-place updates, colocated
//
//===----------------------------------------------------------------------===//
#include "passes/PassManager.h"

namespace mpc::passes {

std::string defaultPipeline(const ir::Graph &graph) {
  std::string p = "infer-shapes,canonicalize,place,insert-copies";
  if (!graph.loss.empty()) p += ",autodiff,insert-copies,optimize-step";
  return p;
}

} // namespace mpc::passes
