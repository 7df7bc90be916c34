//===- bench/BenchUtil.h - what the benchmarks share ----------------------===//
#pragma once

#include "runtime/Executor.h"

#include <chrono>
#include <random>

namespace mpc::bench {

using Clock = std::chrono::steady_clock;

/// Uniform [-1, 1) values (seed 0) in every f32 input of `ex`.
inline void fillInputs(runtime::Executor &ex) {
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const plan::TensorRef &t : ex.plan().inputs) {
    std::vector<float> v(size_t(t.numElements()));
    for (float &x : v) x = u(rng);
    ex.write(t, v.data(), v.size() * 4);
  }
}

/// Seconds per step of `ex`, after one warm-up step, over at least `minSeconds`.
inline double secondsPerStep(runtime::Executor &ex, double minSeconds) {
  ex.step();
  int64_t n = 0;
  auto start = Clock::now();
  double el = 0;
  do {
    ex.step();
    ++n;
    el = std::chrono::duration<double>(Clock::now() - start).count();
  } while (el < minSeconds);
  return el / double(n);
}

/// Seconds per step of `ex` over the iterations Google Benchmark asks for
/// (`state`), after one warm-up step. Templated on the state so that this
/// header needs no benchmark include.
template <class BenchmarkState>
double timedSteps(BenchmarkState &state, runtime::Executor &ex) {
  ex.step();
  auto start = Clock::now();
  for (auto _ : state) ex.step();
  return std::chrono::duration<double>(Clock::now() - start).count() /
         double(state.iterations());
}

} // namespace mpc::bench
