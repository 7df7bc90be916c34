//===- runtime/cuda/CudaGraphs.cpp - a device's kernels replayed as graphs ===//
//
// Capture uses cudaStreamCaptureModeThreadLocal: the devices of one process
// run on their own threads, and another device's thread may allocate
// pinned memory or wait on its stream while this one captures, which the
// global mode would count as a capture error.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaGraphs.h"

#include "runtime/cuda/CudaCheck.h"
#include "support/Error.h"

namespace mpc::runtime::cuda {

KernelGraphs::~KernelGraphs() { release(); }

void KernelGraphs::release() {
  for (cudaGraphExec_t &e : execs_)
    if (e) cudaGraphExecDestroy(e);
  execs_.clear();
}

void KernelGraphs::findRuns(const std::vector<bool> &isKernel) {
  release();
  const size_t n = isKernel.size();
  ends_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) ends_[i] = i;
  for (size_t i = 0; i < n;) {
    size_t end = i;
    while (end < n && isKernel[end]) ++end;
    if (end - i >= kMinKernels) ends_[i] = end;
    i = end > i ? end : i + 1;
  }
  execs_.assign(n, nullptr);
}

size_t KernelGraphs::runs() const {
  size_t count = 0;
  for (size_t i = 0; i < ends_.size(); ++i) count += ends_[i] != i;
  return count;
}

void KernelGraphs::launch(size_t first, cudaStream_t stream,
                          const std::function<void(size_t)> &enqueue,
                          const std::function<std::string()> &describe) {
  MPC_ASSERT(runEnd(first) > first, "no graph run starts at instruction " + std::to_string(first));
  cudaGraphExec_t &exec = execs_[first];
  if (!exec) {
    cudaCheck(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture");
    cudaGraph_t graph = nullptr;
    try {
      for (size_t i = first; i < ends_[first]; ++i) enqueue(i);
    } catch (...) {
      // Leave capture mode before the error travels on: the stream stays usable.
      if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    cudaError_t status = cudaStreamEndCapture(stream, &graph);
    if (status == cudaSuccess) status = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (status != cudaSuccess) {
      cudaGetLastError();
      exec = nullptr;
      throw UserError("", describe(),
                      std::string("cannot capture these kernels in a CUDA graph: ") +
                          cudaGetErrorString(status) + " (run without --cuda-graphs)");
    }
  }
  cudaCheck(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
}

} // namespace mpc::runtime::cuda
