//===- runtime/cuda/CudaJobTransport.cpp - a gpu plan over MPI ranks ----===//
#include "runtime/cuda/CudaJobTransport.h"

namespace mpc::runtime::cuda {

CudaJobTransport::CudaJobTransport(const plan::Plan &plan, std::vector<int> physical,
                                   std::unique_ptr<Transport> host,
                                   std::unique_ptr<NcclProxy> proxy)
    // Peer copies between this rank's GPUs: a second NCCL communicator next
    // to the job's could interleave kernels differently on the two and hang.
    : CudaTransport(plan, std::move(physical), TransportKind::Peer, std::move(host)),
      proxy_(std::move(proxy)) {}

// The proxy stops (and its operations finish) before the base class frees
// the host transport.
CudaJobTransport::~CudaJobTransport() { proxy_.reset(); }

bool CudaJobTransport::isDeviceChannel(uint32_t channel) const {
  return viaNccl(channel) || CudaTransport::isDeviceChannel(channel);
}

void CudaJobTransport::waitStagingFree(uint32_t channel, cudaStream_t stream) {
  if (viaNccl(channel)) proxy_->waitStagingFree(channel, stream);
  else CudaTransport::waitStagingFree(channel, stream);
}

void CudaJobTransport::postDevice(uint32_t channel, const void *staging, size_t bytes,
                                  cudaStream_t stream) {
  if (viaNccl(channel)) proxy_->post(channel, staging, bytes, stream);
  else CudaTransport::postDevice(channel, staging, bytes, stream);
}

void CudaJobTransport::recvDevice(uint32_t channel, void *dst, size_t bytes,
                                  cudaStream_t stream) {
  if (viaNccl(channel)) proxy_->recv(channel, dst, bytes, stream);
  else CudaTransport::recvDevice(channel, dst, bytes, stream);
}

void CudaJobTransport::close() {
  if (proxy_) proxy_->close();
  CudaTransport::close();
}

void CudaJobTransport::finishStep() {
  if (proxy_) proxy_->finishStep();
  CudaTransport::finishStep();
}

} // namespace mpc::runtime::cuda
