//===- runtime/cuda/PluginEntry.cpp - the entry point of libmpc-cuda.so ---===//
//
// The only file of the module that is not also in mpc_runtime_cuda: the
// exported table the loader (PluginLoader.cpp) looks up. See Plugin.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Plugin.h"

#ifndef MPC_VERSION
#define MPC_VERSION "unknown"
#endif

namespace mpc::runtime::cuda {
namespace {

CudaRun prepareRun(const plan::Plan &plan, const std::string &deviceMap,
                   const std::string &transport, bool allowTf32, bool cudaGraphs,
                   const std::vector<int> &rankOf, job::ProcessGroup &group) {
  CudaOptions options = parseCudaOptions(deviceMap, transport, allowTf32, cudaGraphs);
  return prepareCudaRun(plan, options, rankOf, group);
}

const PluginApi api = {kPluginAbiVersion, kPluginLayout, MPC_VERSION, &prepareRun};

} // namespace
} // namespace mpc::runtime::cuda

extern "C" __attribute__((visibility("default"))) const mpc::runtime::cuda::PluginApi *
mpc_cuda_plugin() {
  return &mpc::runtime::cuda::api;
}
