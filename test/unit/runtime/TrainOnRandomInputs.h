//===- test/unit/runtime/TrainOnRandomInputs.h - a plan trained, in a test -===//
//
// The tests that compare two plans of one model (data-parallel against
// ZeRO-1, tensor-parallel against one device) train both on the same inputs:
// normal random values from one fixed seed, drawn afresh each step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/Executor.h"

#include <memory>
#include <random>
#include <vector>

namespace mpc::test {

/// Runs `steps` steps of `p` on two worker threads; returns the executor.
inline std::unique_ptr<runtime::Executor> trainOnRandomInputs(const plan::Plan &p, int steps) {
  auto exec = std::make_unique<runtime::Executor>(p, runtime::cpuBackendFactory(), nullptr,
                                                  std::vector<bool>{}, 2);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  for (int step = 0; step < steps; ++step) {
    for (const plan::TensorRef &t : p.inputs) {
      std::vector<float> v(size_t(t.numElements()));
      for (float &x : v) x = normal(rng);
      exec->write(t, v.data(), v.size() * 4);
    }
    exec->step();
  }
  return exec;
}

} // namespace mpc::test
