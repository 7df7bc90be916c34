//===- runtime/cuda/CudaGraphs.h - a device's kernels replayed as graphs -===//
//
// `mpc run --cuda-graphs`. A small model's GPU step is launch-bound: the
// host spends microseconds enqueueing each of hundreds of kernels that run
// for less. The plan is static: every kernel's pointers, sizes and
// attributes are fixed at load, so the enqueueing itself can be recorded
// once (stream capture) and replayed each step with one cudaGraphLaunch.
//
// What is captured: each *run* of at least kMinKernels consecutive kernel
// instructions of a device's list. Transfers and collectives stay outside,
// enqueued as they are today, between the runs: on one GPU with no
// transfers the whole step is one graph; in a pipeline each stretch of
// compute between two transfers is one. Transfers synchronise with other
// streams and the host (events, NCCL, pinned copies), which is what graph
// capture handles least well; kernels only touch this device's block.
//
// What may change between steps, and how it still reaches the kernels:
// only the step number (dropout's masks), which launchBeginStep writes
// into the device's DataError record before each step, outside any graph,
// and the dropout kernel reads there. The data of a batch arrives by
// uploads into the same fixed buffers. A kernel that read anything else
// from the host at enqueue would be wrong under replay; none does, and
// the CUDA tests compare every step with and without graphs bit for bit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace mpc::runtime::cuda {

class KernelGraphs {
public:
  /// Runs shorter than this launch as they are: a graph of one kernel saves
  /// nothing.
  static constexpr size_t kMinKernels = 2;

  KernelGraphs() = default;
  ~KernelGraphs();
  KernelGraphs(const KernelGraphs &) = delete;
  KernelGraphs &operator=(const KernelGraphs &) = delete;

  /// Finds the runs of a device's list: isKernel[i] says whether
  /// instruction i is a kernel. Forgets graphs captured before.
  void findRuns(const std::vector<bool> &isKernel);
  /// One past the last instruction of the run that starts at instruction
  /// `first`, or `first` when none starts there.
  size_t runEnd(size_t first) const { return first < ends_.size() ? ends_[first] : first; }
  /// Number of runs (the graphs a step launches).
  size_t runs() const;

  /// Launches the run starting at `first` on `stream`. The first call
  /// captures enqueue(i) for every instruction i of the run into a graph
  /// and instantiates it; every call launches that graph. Throws UserError
  /// (where: describe()) when the capture fails, with CUDA's reason; the
  /// stream is left out of capture mode.
  void launch(size_t first, cudaStream_t stream, const std::function<void(size_t)> &enqueue,
              const std::function<std::string()> &describe);

private:
  void release();

  std::vector<size_t> ends_;               ///< by instruction: runEnd
  std::vector<cudaGraphExec_t> execs_;     ///< by instruction: the run's graph, once captured
};

} // namespace mpc::runtime::cuda
