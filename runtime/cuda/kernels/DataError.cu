//===- runtime/cuda/kernels/DataError.cu - the step of a bad-data report -===//
//
// Kernels that index with data (cross-entropy labels, embedding ids) report
// a bad index to the device's DataError record (reportBadIndex, Common.cuh)
// tagged with the step being run. The host enqueues steps without waiting
// for them, so the step cannot be passed by value to kernels prepared at
// load: a one-thread kernel at the start of each step writes it into the
// record, in stream order before the step's kernels read it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"

namespace mpc::runtime::cuda {

namespace {

__global__ void beginStepKernel(DataError *record, long long step) { record->step = step; }

} // namespace

void launchBeginStep(DataError *record, int64_t step, cudaStream_t stream) {
  beginStepKernel<<<1, 1, 0, stream>>>(record, static_cast<long long>(step));
}

} // namespace mpc::runtime::cuda
