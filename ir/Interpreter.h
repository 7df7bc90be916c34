//===- ir/Interpreter.h - the reference evaluator -----------------------===//
//
// The oracle for every backend: walks a graph in topological order and calls
// each op record's float64 reference kernel. Devices are ignored (a copy is
// the identity). Not the production runtime: naive loops, no memory planning.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/RefTensor.h"

#include <map>
#include <string>

namespace mpc::ir {

class Interpreter {
public:
  /// Initialises every Param and State from its InitSpec (see ir/Init.h).
  Interpreter(const Graph &graph, uint64_t seed = kDefaultSeedForInterpreter);
  static constexpr uint64_t kDefaultSeedForInterpreter = 0;

  /// Sets the number of the next step() (1 at first): dropout masks depend on it.
  void setNextStep(int64_t step) { step_ = step - 1; }

  /// Current values of params and state (mutated by optimizer ops in step()).
  std::map<std::string, RefTensor> &persistent() { return persistent_; }

  /// Evaluates the whole graph once with the given input values, running
  /// optimizer updates (which mutate persistent()). Returns every node's value
  /// by name. Throws UserError if an input is missing or has the wrong shape.
  std::map<std::string, RefTensor> step(const std::map<std::string, RefTensor> &inputs);

private:
  const Graph &graph_;
  uint64_t seed_;
  int64_t step_ = 0; ///< steps run so far (dropout masks depend on the step)
  std::map<std::string, RefTensor> persistent_;
};

} // namespace mpc::ir
