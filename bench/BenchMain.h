//===- bench/BenchMain.h - the main of the Google Benchmark programs -------===//
#pragma once

#include "runtime/cpu/BlasCore.h"

#include <benchmark/benchmark.h>

namespace mpc::bench {

/// OpenBLAS with the kernels this CPU has, as `mpc run` gets them
/// (runtime/cpu/BlasCore.h), then Google Benchmark's usual main.
inline int runBenchmarks(int argc, char **argv) {
  runtime::cpu::reexecWithFittingBlasCore(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

} // namespace mpc::bench
