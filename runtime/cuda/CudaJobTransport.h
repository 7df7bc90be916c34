//===- runtime/cuda/CudaJobTransport.h - a gpu plan over MPI ranks ------===//
//
// The transport of one rank when a gpu plan runs under mpirun. Each channel
// goes the way its two ends allow:
//   * both ends GPU devices of this rank: CudaTransport's device path (peer
//     copies, or cudaMemcpyAsync on one GPU), as in a single process;
//   * both ends GPU devices, on different ranks: ncclSend/ncclRecv through
//     the NcclProxy, when the job has a communicator; otherwise (GPUs shared
//     between ranks, a build without NCCL) the host path below;
//   * everything else (a cpu end, or the fallback): the host path, through
//     pinned host buffers and the process group's transport (MPI messages
//     between ranks, in-process channels within one).
// CudaBackend::runStep asks isDeviceChannel() which of the two paths to
// take, so this class only routes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/CudaTransport.h"
#include "runtime/cuda/NcclProxy.h"

#include <memory>

namespace mpc::runtime::cuda {

class CudaJobTransport final : public CudaTransport {
public:
  /// `physical`: as CudaTransport's (-1 for devices of other ranks). `host`:
  /// the group's transport. `proxy`: null when no channel goes over NCCL.
  CudaJobTransport(const plan::Plan &plan, std::vector<int> physical,
                   std::unique_ptr<Transport> host, std::unique_ptr<NcclProxy> proxy);
  ~CudaJobTransport() override;

  bool isDeviceChannel(uint32_t channel) const override;
  void waitStagingFree(uint32_t channel, cudaStream_t stream) override;
  void postDevice(uint32_t channel, const void *staging, size_t bytes,
                  cudaStream_t stream) override;
  void recvDevice(uint32_t channel, void *dst, size_t bytes, cudaStream_t stream) override;
  void close() override;
  void finishStep() override;

private:
  bool viaNccl(uint32_t channel) const { return proxy_ && proxy_->carries(channel); }
  std::unique_ptr<NcclProxy> proxy_;
};

} // namespace mpc::runtime::cuda
