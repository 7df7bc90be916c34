//===- runtime/cpu/BlasCore.h - OpenBLAS kernels that fit the CPU --------===//
//
// OpenBLAS picks its kernels once, when it loads, from the CPU's model
// number. On a CPU it does not know (virtual machines often report a
// generic "Intel Xeon Processor") it falls back to Prescott's SSE3 kernels,
// which run sgemm about 4x slower than the AVX-512 or AVX2 kernels the CPU
// has (measured on the development VM: 22 against 112 GFLOP/s). The choice
// can only be changed through OPENBLAS_CORETYPE before the library loads,
// so a program that wants the fitting kernels re-executes itself with it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace mpc::runtime::cpu {

/// The kernels OpenBLAS loaded with ("Prescott", "SkylakeX"), or "" when
/// the BLAS library is not OpenBLAS.
std::string blasCoreName();

/// The OPENBLAS_CORETYPE that fits this CPU better than the loaded kernels
/// ("SkylakeX" with AVX-512, "Haswell" with AVX2 and FMA), or "" when the
/// loaded ones fit, OPENBLAS_CORETYPE is already set, or the library is not
/// OpenBLAS.
std::string betterBlasCore();

/// When betterBlasCore() names one, sets OPENBLAS_CORETYPE to it and
/// re-executes this program (/proc/self/exe) with the same arguments, so
/// that OpenBLAS loads its fitting kernels; returns (doing nothing) where
/// that is not needed or not possible. Call first thing in main, before any
/// thread or library state exists. MPC_KEEP_BLAS_CORE=1 turns it off.
void reexecWithFittingBlasCore(char **argv);

} // namespace mpc::runtime::cpu
