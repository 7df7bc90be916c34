//===- bench/BenchUtil.h - what the benchmarks share ----------------------===//
#pragma once

#include "runtime/Executor.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

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

/// Seconds per step of each executor in each of `rounds` rounds: in a
/// round each executor in turn runs one step untimed (its memory back in
/// the caches after the others') and then `steps` timed ones, overlapped as
/// `mpc run` runs them (Executor::runSteps); the order rotates by one per
/// round. Neighbouring turns share the machine's moment, so the ratio of
/// two executors' times in one round cancels most of a shared machine's
/// drift, which moves single runs by 20% and more.
inline std::vector<std::vector<double>>
pairedSteps(const std::vector<runtime::Executor *> &runs, int rounds, int steps) {
  std::vector<std::vector<double>> t(runs.size(), std::vector<double>(size_t(rounds)));
  for (int r = 0; r < rounds; ++r)
    for (size_t j = 0; j < runs.size(); ++j) {
      const size_t i = (j + size_t(r)) % runs.size();
      runs[i]->step();
      auto start = Clock::now();
      runs[i]->runSteps(steps);
      t[i][size_t(r)] =
          std::chrono::duration<double>(Clock::now() - start).count() / double(steps);
    }
  return t;
}

/// The median over rounds of a[r] / b[r].
inline double medianRatio(const std::vector<double> &a, const std::vector<double> &b) {
  std::vector<double> q(a.size());
  for (size_t r = 0; r < a.size(); ++r) q[r] = a[r] / b[r];
  std::nth_element(q.begin(), q.begin() + long(q.size() / 2), q.end());
  return q[q.size() / 2];
}

/// The least of a round's times.
inline double fastest(const std::vector<double> &t) {
  return *std::min_element(t.begin(), t.end());
}

} // namespace mpc::bench
