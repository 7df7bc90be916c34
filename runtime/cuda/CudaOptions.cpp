//===- runtime/cuda/CudaOptions.cpp - GPUs, device map, transport flag --===//
//
// Finding the GPUs and mapping a plan's logical devices onto them. A build
// with CUDA on a machine without a GPU still runs CPU plans: nothing here
// is called unless the plan names a gpu:N device, and then the user gets a
// plain error instead of a driver failure.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "support/Error.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <set>

namespace mpc::runtime::cuda {

namespace {

/// N of "gpu:N", or -1 when `name` is not a gpu device.
int gpuIndex(const std::string &name) {
  if (name.rfind("gpu:", 0) != 0 || name.size() == 4) return -1;
  int n = 0;
  for (size_t i = 4; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > 100000) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

std::string plural(int n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

} // namespace

int visibleGpuCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky-free error state of this thread
    return 0;
  }
  return count;
}

bool cudaAvailable(std::string *why) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
    cudaGetLastError();
    if (why) *why = "no CUDA device is visible";
    return false;
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no CUDA device is visible (") + cudaGetErrorString(status) + ")";
    return false;
  }
  return true;
}

bool ncclAvailable() {
#ifdef MPC_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

bool planUsesGpu(const plan::Plan &plan) { return plan::usesGpu(plan); }

std::map<std::string, int> parseDeviceMap(const std::string &text) {
  std::map<std::string, int> map;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    std::string entry = text.substr(pos, comma == std::string::npos ? std::string::npos
                                                                    : comma - pos);
    size_t eq = entry.find('=');
    std::string key = eq == std::string::npos ? entry : entry.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : entry.substr(eq + 1);
    bool ok = gpuIndex(key) >= 0 && !value.empty() && value.size() < 6 &&
              value.find_first_not_of("0123456789") == std::string::npos;
    if (!ok)
      throw UserError("", "--device-map",
                      "bad entry '" + entry + "' (expected gpu:N=ORDINAL, e.g. gpu:1=0)");
    if (!map.emplace(key, std::atoi(value.c_str())).second)
      throw UserError("", "--device-map", "device '" + key + "' mapped twice");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return map;
}

TransportKind parseTransport(const std::string &text) {
  std::string problem = transportNameProblem(text);
  if (!problem.empty()) throw UserError("", "--transport", problem);
  if (text != kTransportNames[int(TransportKind::Nccl)]) return TransportKind::Peer;
  if (!ncclAvailable())
    throw UserError("", "--transport", std::string("this mpc was built without NCCL; use '") +
                                           kTransportNames[int(TransportKind::Peer)] + "'");
  return TransportKind::Nccl;
}

CudaOptions parseCudaOptions(const std::string &deviceMap, const std::string &transport,
                             bool allowTf32, bool cudaGraphs) {
  CudaOptions o;
  o.deviceMap = parseDeviceMap(deviceMap);
  o.transport = parseTransport(transport);
  o.allowTf32 = allowTf32;
  o.cudaGraphs = cudaGraphs;
  return o;
}

std::vector<int> resolvePhysicalDevices(const plan::Plan &plan, const CudaOptions &options) {
  std::set<std::string> names;
  for (const plan::DeviceProgram &d : plan.devices) names.insert(d.device);
  for (const auto &[name, ordinal] : options.deviceMap) {
    (void)ordinal;
    if (!names.count(name))
      throw UserError("", "--device-map", "the plan has no device '" + name + "'");
  }
  std::string why;
  bool available = cudaAvailable(&why);
  int count = available ? visibleGpuCount() : 0;
  std::vector<int> physical;
  for (const plan::DeviceProgram &d : plan.devices) {
    int n = gpuIndex(d.device);
    if (n < 0) {
      physical.push_back(-1);
      continue;
    }
    if (!available) throw UserError("", "", "plan uses " + d.device + " but " + why);
    auto it = options.deviceMap.find(d.device);
    int ordinal = it == options.deviceMap.end() ? n : it->second;
    if (ordinal >= count) {
      std::string how = it == options.deviceMap.end()
                            ? " (map it with --device-map " + d.device + "=0)"
                            : "";
      throw UserError("", it == options.deviceMap.end() ? "" : "--device-map",
                      "plan uses " + d.device + " on GPU " + std::to_string(ordinal) +
                          " but only " + plural(count, "CUDA device") +
                          (count == 1 ? " is" : " are") + " visible" + how);
    }
    physical.push_back(ordinal);
  }
  return physical;
}

} // namespace mpc::runtime::cuda
