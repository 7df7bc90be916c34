//===- runtime/cuda/PluginLoader.cpp - finding and loading libmpc-cuda.so --===//
//
// Compiled into the `mpc` binary (library mpc_cuda_loader), with no CUDA
// dependency: see Plugin.h for why the CUDA runtime is a module.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Plugin.h"
#include "support/Error.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <unistd.h>

namespace mpc::runtime::cuda {

namespace {

/// The folder of the running binary ("" when /proc is unavailable).
std::string binaryFolder() {
  std::string path(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || size_t(n) >= path.size()) return "";
  path.resize(size_t(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string pluginPath() {
  if (const char *env = std::getenv("MPC_CUDA_PLUGIN"); env && *env) return env;
  std::string folder = binaryFolder();
  return folder.empty() ? kPluginFileName : folder + "/" + kPluginFileName;
}

const PluginApi *load() {
  std::string path = pluginPath();
  // RTLD_LOCAL: the module's copy of the runtime libraries stays its own.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    throw UserError(path, "",
                    std::string("cannot load the CUDA runtime: ") + (why ? why : "unknown reason") +
                        " (set MPC_CUDA_PLUGIN to the module's path, or run a plan without "
                        "gpu devices on the CPU runtime)");
  }
  using EntryFn = const PluginApi *(*)();
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, "mpc_cuda_plugin"));
  if (!entry)
    throw UserError(path, "", "not an mpc CUDA runtime module: no mpc_cuda_plugin symbol");
  const PluginApi *api = entry();
  if (!api || api->abiVersion != kPluginAbiVersion || api->layout != kPluginLayout ||
      !api->prepareRun)
    throw UserError(path, "",
                    std::string("the CUDA runtime module comes from another build (mpc ") +
                        (api && api->version ? api->version : "?") +
                        "); rebuild mpc, or point MPC_CUDA_PLUGIN at this build's module");
  return api;
}

} // namespace

const PluginApi &loadCudaPlugin() {
  static std::mutex mutex;
  static const PluginApi *loaded = nullptr;
  std::lock_guard lock(mutex);
  // A failed load throws and is retried on the next call (with the same
  // outcome); a module once loaded stays loaded for the process.
  if (!loaded) loaded = load();
  return *loaded;
}

} // namespace mpc::runtime::cuda
