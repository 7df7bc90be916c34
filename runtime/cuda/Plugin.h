//===- runtime/cuda/Plugin.h - the CUDA runtime as a module loaded on demand -===//
//
// The `mpc` binary does not link CUDA. cudart, cuBLAS, cuBLASLt and NCCL
// take about 200 MiB of address space and resident memory once loaded, and
// a CPU run has no use for them; so the CUDA backend is built as a separate
// module, libmpc-cuda.so, next to the binary, and `mpc run` loads it
// (dlopen) only when a plan uses a GPU or `--backend cuda` asks for it.
//
// The module exports one C symbol, `mpc_cuda_plugin`, returning a PluginApi:
// a version check and the one entry point the driver needs. Both sides are
// built from the same tree in the same build; the version and the layout
// fingerprint below refuse a module left over from another build, whose
// types could differ, with a message instead of a crash.
//
// The module carries its own copy of the runtime libraries it was linked
// with (loaded RTLD_LOCAL, so the two copies never interpose); objects cross
// the boundary through virtual interfaces (Backend, Transport,
// ProcessGroup) and std::function, and exceptions (UserError) propagate as
// usual. The CUDA unit tests and benchmarks link the backend directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaBackend.h"

#include <string>
#include <vector>

namespace mpc::runtime::cuda {

/// Bumped when PluginApi or the meaning of its arguments changes.
inline constexpr int kPluginAbiVersion = 2;

/// Sizes of the types that cross the boundary, so that a module built
/// against other headers is refused rather than misread.
inline constexpr unsigned long long kPluginLayout =
    (sizeof(plan::Plan) << 40) ^ (sizeof(CudaRun) << 24) ^ (sizeof(CudaOptions) << 12) ^
    sizeof(std::vector<int>);

/// The one entry point of the module: parseCudaOptions and the job overload
/// of prepareCudaRun (CudaBackend.h) in one call.
using PrepareRunFn = CudaRun (*)(const plan::Plan &plan, const std::string &deviceMap,
                                 const std::string &transport, bool allowTf32,
                                 bool cudaGraphs, const std::vector<int> &rankOf,
                                 job::ProcessGroup &group);

struct PluginApi {
  int abiVersion;
  unsigned long long layout;
  const char *version; ///< mpc's version string, for messages
  PrepareRunFn prepareRun;
};

/// The module's file name, looked for next to the running binary.
inline constexpr const char *kPluginFileName = "libmpc-cuda.so";

/// Loads the module (once per process) and returns its entry points. The
/// path is $MPC_CUDA_PLUGIN when set, else kPluginFileName in the folder of
/// the running binary. Throws UserError naming the path and the loader's
/// reason when the file is missing, a library it needs (libcudart, ...)
/// cannot be found, or the module comes from another build.
const PluginApi &loadCudaPlugin();

} // namespace mpc::runtime::cuda

extern "C" {
/// Exported by libmpc-cuda.so.
const mpc::runtime::cuda::PluginApi *mpc_cuda_plugin();
}
