//===- runtime/cuda/CudaDevice.h - the backend of one logical GPU -------===//
//
// CudaBackend implements runtime::Backend for one `gpu:N` device of a plan on
// one physical GPU: its stream and cuBLAS handle, one cudaMalloc'd block
// laid out as [persistent | arena | staging | scratch | cuBLAS workspace |
// bad-data record (DataError, kernels/Kernels.h)], and the device's
// instruction list resolved to closures at load. runStep only enqueues work
// (see CudaBackend.h), its runs of kernels as CUDA graphs under
// --cuda-graphs (CudaGraphs.h); upload and download are the only places
// that touch host memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"
#include "runtime/Collective.h"
#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaGraphs.h"
#include "runtime/cuda/kernels/CudaKernels.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace mpc::runtime::cuda {

class CudaTransport;

class CudaBackend final : public Backend {
public:
  CudaBackend(int physicalGpu, const CudaOptions &options, std::shared_ptr<CudaRunInfo> info);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  std::string kind() const override { return "cuda"; }
  void load(const plan::Plan &plan, uint32_t device) override;
  void upload(uint32_t buffer, const void *src, size_t bytes) override;
  void download(uint32_t buffer, void *dst, size_t bytes) override;
  void runStep(Transport &transport, int64_t step) override;
  DeviceStats stats() const override { return stats_; }
  /// Tracing on a GPU: an event is recorded on the stream at the step's
  /// start and after every instruction, so instruction i's span runs from
  /// the event before it to its own, in the stream's time (the GPU's, not
  /// the host's enqueueing). takeSpans waits for the step's last event and
  /// converts: a reference event, recorded once on an idle stream when
  /// tracing starts, is paired with the host's clock then. Refused (UserError)
  /// under --cuda-graphs, whose replays have no events between kernels.
  void setTracing(bool on) override;
  void takeSpans(std::vector<InstrSpan> &out) override;

  int physicalGpu() const { return gpu_; }
  cudaStream_t stream() const { return stream_; }
  /// Device pointer of buffer `id` (tests).
  void *bufferPtr(uint32_t id) const { return ptrs_[id]; }
  /// Waits for every queued step; rethrows a device-side data error.
  void synchronize();
  /// Times every kernel instruction in isolation (the GPU otherwise idle):
  /// `reps` back-to-back launches between two events, per instruction, in
  /// milliseconds per launch; 0 for sends and receives. For benchmarks: it
  /// runs kernels outside a step, so optimizer updates change the params.
  std::vector<float> timeKernels(int reps);
  /// Runs of kernels a step launches as CUDA graphs (0 without --cuda-graphs).
  size_t graphRuns() const { return options_.cudaGraphs ? graphs_.runs() : 0; }
  /// Start/end events of the last step (timing enabled), or null.
  cudaEvent_t stepStart() const { return timedSteps_ ? timeStart_ : nullptr; }
  cudaEvent_t stepEnd() const { return timedSteps_ ? timeEnd_ : nullptr; }

private:
  struct Action {
    plan::InstrKind kind = plan::InstrKind::Kernel;
    Launch launch;            ///< Kernel
    const char *op = "";      ///< Kernel: for error messages
    uint32_t channel = 0;     ///< Send/Recv
    void *ptr = nullptr;      ///< Send: source; Recv: destination
    void *staging = nullptr;  ///< Send to a GPU: the channel's staging buffer
    void *pinned = nullptr;   ///< host path: pinned bounce buffer
    size_t bytes = 0;
    /// Collective, staged through pinned host memory: `ptr` (contribution,
    /// `bytes`) goes to `pinned`, the steps run there, and `hostResult`
    /// (`resultBytes`) comes back to `result`.
    void *result = nullptr, *hostResult = nullptr;
    size_t resultBytes = 0;
    std::vector<CollectiveStep> steps;
  };
  /// Throws the UserError of bad data a kernel recorded (see DataError).
  void checkErrorFlag();
  /// Enqueues kernel instruction i on the stream.
  void launchKernel(size_t i);
  std::string where(size_t instr) const;
  /// where() plus the kernel instruction's op and node.
  std::string whereKernel(size_t instr) const;

  int gpu_;
  CudaOptions options_;
  std::shared_ptr<CudaRunInfo> info_;
  std::string deviceName_;
  const plan::DeviceProgram *program_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void *block_ = nullptr;
  DataError *dataError_ = nullptr; ///< the bad-data record, in the block's last slot
  std::vector<const plan::Buffer *> buffers_;
  /// The f32 descriptions of bf16 and f16 buffers that kernels see through
  /// staging (load); a deque, so the kernels' pointers stay valid.
  std::deque<plan::Buffer> shadowBuffers_;
  std::vector<void *> ptrs_;
  std::vector<Action> actions_;
  KernelGraphs graphs_; ///< --cuda-graphs
  std::vector<void *> pinned_;            ///< host-path bounce buffers
  std::vector<void *> uploadPinned_;      ///< per buffer, from its second upload on
  std::vector<cudaEvent_t> uploadEvents_; ///< per buffer: its last pinned upload
  std::vector<uint8_t> uploadCount_;
  cudaEvent_t timeStart_ = nullptr, timeEnd_ = nullptr;
  bool timedSteps_ = false;
  bool tracing_ = false;
  bool traced_ = false;                  ///< the last step recorded traceEvents_
  cudaEvent_t traceRef_ = nullptr;       ///< paired with traceRefNs_
  int64_t traceRefNs_ = 0;
  std::vector<cudaEvent_t> traceEvents_; ///< [0] the step's start, [i + 1] after instruction i
  DeviceStats stats_;
};

} // namespace mpc::runtime::cuda
