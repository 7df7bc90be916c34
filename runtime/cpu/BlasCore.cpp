//===- runtime/cpu/BlasCore.cpp - OpenBLAS kernels that fit the CPU ------===//
#include "runtime/cpu/BlasCore.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

// OpenBLAS's own query; weak, so that another BLAS links too (then it is
// null and nothing is changed).
extern "C" char *openblas_get_corename(void) __attribute__((weak));

namespace mpc::runtime::cpu {

namespace {

/// OpenBLAS's generic x86-64 kernels, weakest first, as far as this code
/// cares: anything here is worse than AVX2 kernels.
bool isPreAvx2Core(const std::string &core) {
  for (const char *weak : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                           "Sandybridge", "Barcelona", "Bobcat", "Bulldozer", "Piledriver",
                           "Steamroller", "Excavator", "Katmai", "Coppermine", "Northwood",
                           "Banias", "Athlon", "Opteron", "Opteron(SSE3)", "Nano", "Unknown"})
    if (core == weak) return true;
  return false;
}

} // namespace

std::string blasCoreName() {
  if (!openblas_get_corename) return "";
  const char *name = openblas_get_corename();
  return name ? std::string(name) : std::string();
}

std::string betterBlasCore() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (std::getenv("OPENBLAS_CORETYPE")) return "";
  std::string core = blasCoreName();
  if (core.empty()) return "";
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512cd");
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512 && (isPreAvx2Core(core) || core == "Haswell" || core == "Zen")) return "SkylakeX";
  if (avx2 && isPreAvx2Core(core)) return "Haswell";
#endif
  return "";
}

void reexecWithFittingBlasCore(char **argv) {
  const char *keep = std::getenv("MPC_KEEP_BLAS_CORE");
  if (keep && std::strcmp(keep, "0") != 0) return;
  std::string core = betterBlasCore();
  if (core.empty()) return;
  if (setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // The exec failed (no /proc): carry on with the loaded kernels.
  unsetenv("OPENBLAS_CORETYPE");
}

} // namespace mpc::runtime::cpu
