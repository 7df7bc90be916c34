//===- compiler/Evaluate.h - the reference interpreter on a model's data ---===//
//
// `mpc opt model.json [--passes ...] --eval --input x=x.npy ...` checks a
// graph against the reference semantics without writing C++: the float64
// interpreter (ir/Interpreter.h) runs one step of the graph, after whatever
// passes ran, on the first batch of each dataset (rows [0, B) of axis 0, B
// the input's batch), with parameters drawn from their initialisers with the
// seed, as `mpc compile --seed` draws a plan's. Its loss is `mpc run`'s first
// loss line, and its values are the plan's outputs (`mpc run --output`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/RefTensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpc::compiler {

/// A dataset: `shape` (axis 0 its rows) and row-major values.
struct Dataset {
  std::string file; ///< where it came from, for messages
  ir::RefTensor values;
};

struct Evaluation {
  std::optional<double> loss;                  ///< the graph's loss, if it has one
  std::map<std::string, ir::RefTensor> values; ///< each value asked for
};

/// One step of `graph` on the first batch of `data` (one dataset per input
/// of the graph), returning the loss and the values named in `wanted` (any
/// value of the graph). Throws UserError naming the input, the file and
/// both shapes when a dataset is missing, unknown, too short or of another
/// shape, and naming the value when `wanted` names none.
Evaluation evaluate(const ir::Graph &graph, const std::map<std::string, Dataset> &data,
                    const std::vector<std::string> &wanted, uint64_t seed);

} // namespace mpc::compiler
