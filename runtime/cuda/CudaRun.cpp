//===- runtime/cuda/CudaRun.cpp - factory, transport and timing ---------===//
//
// prepareCudaRun turns a plan and the `mpc run` flags into what the
// Executor takes: a backend factory (CUDA for gpu:N, CPU for cpu:N) and a
// CudaTransport. It checks the GPUs first, so a machine without one gets a
// plain error before anything is allocated, and enables peer access between
// the physical GPUs in use where the hardware allows it (otherwise
// cudaMemcpyPeerAsync still works, staged through the host by the driver).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaRunParts.h"
#include "runtime/cuda/CudaTransport.h"

#include <algorithm>
#include <set>

namespace mpc::runtime::cuda {

void CudaRunInfo::enableTiming(bool on) { timing = on; }

StepTiming CudaRunInfo::lastStepTiming() {
  StepTiming t;
  t.deviceMs.assign(backends.size(), -1.f);
  cudaEvent_t ref = nullptr;
  int refGpu = -1;
  for (size_t d = 0; d < backends.size(); ++d) {
    CudaBackend *b = backends[d];
    if (!b || !b->stepStart()) continue;
    b->synchronize();
    cudaCheck(cudaEventElapsedTime(&t.deviceMs[d], b->stepStart(), b->stepEnd()),
              "cudaEventElapsedTime");
    if (!ref) {
      ref = b->stepStart();
      refGpu = b->physicalGpu();
    }
  }
  // Wall time over the devices on the first device's GPU (events of
  // different GPUs cannot be compared).
  float first = 0, last = 0;
  for (CudaBackend *b : backends) {
    if (!b || !b->stepStart() || b->physicalGpu() != refGpu) continue;
    float s = 0, e = 0;
    cudaCheck(cudaEventElapsedTime(&s, ref, b->stepStart()), "cudaEventElapsedTime");
    cudaCheck(cudaEventElapsedTime(&e, ref, b->stepEnd()), "cudaEventElapsedTime");
    first = std::min(first, s);
    last = std::max(last, e);
  }
  t.wallMs = last - first;
  return t;
}

void enablePeerAccess(const std::vector<int> &physical) {
  std::set<int> gpus;
  for (int g : physical)
    if (g >= 0) gpus.insert(g);
  for (int a : gpus)
    for (int b : gpus) {
      if (a == b) continue;
      int can = 0;
      cudaCheck(cudaDeviceCanAccessPeer(&can, a, b), "cudaDeviceCanAccessPeer");
      if (!can) continue;
      cudaCheck(cudaSetDevice(a), "cudaSetDevice");
      cudaError_t s = cudaDeviceEnablePeerAccess(b, 0);
      if (s == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else cudaCheck(s, "cudaDeviceEnablePeerAccess");
    }
}

CudaRun assembleCudaRun(const CudaOptions &options, std::vector<int> physical,
                        std::unique_ptr<Transport> transport) {
  CudaRun run;
  run.info = std::make_shared<CudaRunInfo>();
  run.info->backends.assign(physical.size(), nullptr);
  run.info->physical = std::move(physical);
  std::shared_ptr<CudaRunInfo> info = run.info;
  BackendFactory cpu = cpuBackendFactory();
  run.factory = [info, options, cpu](const plan::Plan &p,
                                     uint32_t device) -> std::unique_ptr<Backend> {
    if (device >= info->physical.size() || info->physical[device] < 0) return cpu(p, device);
    auto b = std::make_unique<CudaBackend>(info->physical[device], options, info);
    info->backends[device] = b.get();
    return b;
  };
  run.transport = std::move(transport);
  return run;
}

CudaRun prepareCudaRun(const plan::Plan &plan, const CudaOptions &options) {
  std::vector<int> physical = resolvePhysicalDevices(plan, options);
  enablePeerAccess(physical);
  auto transport = std::make_unique<CudaTransport>(plan, physical, options.transport);
  return assembleCudaRun(options, std::move(physical), std::move(transport));
}

} // namespace mpc::runtime::cuda
