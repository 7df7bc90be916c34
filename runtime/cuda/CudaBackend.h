//===- runtime/cuda/CudaBackend.h - running plans on NVIDIA GPUs --------===//
//
// The CUDA backend plugs into the backend-agnostic Executor
// (runtime/Executor.h): one CudaBackend per logical `gpu:N` device of a plan,
// each with its own stream, cuBLAS handle and one cudaMalloc'd block (the
// persistent region, the arena, transfer staging, kernel scratch) sized from
// the plan at load; and a CudaTransport that moves data between GPUs with
// peer copies or NCCL, ordered by CUDA events. Worker threads only *issue*
// work: a step returns once every device's work is queued, and the host
// waits for the GPU only when it reads data back (the loss every K steps,
// outputs, parameters).
//
// Logical devices map onto physical GPUs through a device map
// (`--device-map gpu:0=0,gpu:1=0,gpu:2=0`), so a three-device plan also runs
// on one GPU; by default gpu:N runs on GPU N. `cpu:N` devices of a mixed plan
// run on the CPU backend and exchange data with GPUs through host memory.
//
// How `mpc run` uses it (tools/mpc/RunCommand.cpp, under MPC_HAVE_CUDA):
//
//   if (cuda::planUsesGpu(plan)) {
//     cuda::CudaOptions opts =
//         cuda::parseCudaOptions(deviceMap, transport, allowTf32, cudaGraphs);
//     cuda::CudaRun run = cuda::prepareCudaRun(plan, opts); // UserError if no GPU
//     Executor exec(plan, std::move(run.factory), std::move(run.transport));
//     ...
//   }
//
// Under mpirun each rank calls the overload with the rank map and the
// process group: it picks this rank's GPUs (GpuAssignment.h), sets up one
// NCCL communicator over all the job's GPU devices (NcclBootstrap.h) and
// returns a transport that moves GPU data between ranks with NCCL
// (CudaJobTransport.h, NcclProxy.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/Backend.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mpc::runtime::job {
class ProcessGroup;
} // namespace mpc::runtime::job

namespace mpc::runtime::cuda {

/// How data moves between logical devices on different physical GPUs.
enum class TransportKind {
  Peer, ///< cudaMemcpyPeerAsync (peer access enabled where the GPUs allow)
  Nccl, ///< ncclSend/ncclRecv over one communicator of the physical GPUs
};

/// The names `mpc run --transport` takes, in TransportKind order.
inline constexpr const char *kTransportNames[] = {"peer", "nccl"};

/// "" when `text` is empty (the default) or one of kTransportNames, else
/// the message that refuses it. The driver checks --transport with it in
/// every build and for every plan, parseTransport again here.
inline std::string transportNameProblem(const std::string &text) {
  std::string expected;
  for (const char *name : kTransportNames) {
    if (text == name) return "";
    expected += (expected.empty() ? "" : " or ") + std::string(name);
  }
  return text.empty() ? "" : "unknown transport '" + text + "' (expected " + expected + ")";
}

struct CudaOptions {
  /// Logical device name ("gpu:1") -> physical GPU ordinal. Devices not listed
  /// map gpu:N -> N.
  std::map<std::string, int> deviceMap;
  TransportKind transport = TransportKind::Peer;
  /// Lets cuBLAS use TF32 tensor cores for matmul (CUBLAS_TF32_TENSOR_OP_MATH):
  /// several times faster on Ampere and later, about 1e-3 relative error.
  bool allowTf32 = false;
  /// `mpc run --cuda-graphs`: each run of two or more consecutive kernel
  /// instructions of a device's list (a whole step on one GPU; the work
  /// between transfers in a pipeline) is captured once into a CUDA graph and
  /// replayed every step, one launch instead of one per kernel. The plan is
  /// static, so every pointer and size is fixed; the step number, the one
  /// thing that changes, reaches dropout on the device (the DataError
  /// record). Results are bit-identical to launching the kernels one by one.
  bool cudaGraphs = false;
};

/// True when the CUDA runtime finds at least one GPU; otherwise false and
/// `*why` (if given) says why ("no CUDA device is visible", a driver error).
bool cudaAvailable(std::string *why = nullptr);
/// Number of visible GPUs (0 when the driver is missing or fails).
int visibleGpuCount();
/// True when the build has the NCCL transport.
bool ncclAvailable();

/// True when some device of `plan` is named gpu:N.
bool planUsesGpu(const plan::Plan &plan);

/// Parses "gpu:0=0,gpu:1=0"; throws UserError naming the flag and the bad
/// entry.
std::map<std::string, int> parseDeviceMap(const std::string &text);
/// Parses "peer" / "nccl"; throws UserError (also for nccl in a build without
/// NCCL).
TransportKind parseTransport(const std::string &text);
/// The four `mpc run` flags in one go (empty strings mean the defaults).
CudaOptions parseCudaOptions(const std::string &deviceMap, const std::string &transport,
                             bool allowTf32, bool cudaGraphs = false);

/// The physical GPU of every device of `plan` (-1 for cpu:N devices). Throws
/// UserError "plan uses gpu:0 but no CUDA device is visible", or names the
/// device and the number of visible GPUs when the map points past them.
std::vector<int> resolvePhysicalDevices(const plan::Plan &plan, const CudaOptions &options);

class CudaBackend;

/// Timing of the last step per logical GPU device, in milliseconds, measured
/// with CUDA events on each device's stream (see CudaRunInfo::enableTiming).
struct StepTiming {
  std::vector<float> deviceMs; ///< first to last instruction of each device (-1: cpu)
  float wallMs = 0;            ///< earliest start to latest end over all devices
};

/// Shared between the factory and whoever made it: the backends it created,
/// for timing and tests.
class CudaRunInfo {
public:
  /// Records events around each device's step from the next step on.
  void enableTiming(bool on);
  /// Synchronises and reads the events of the last step.
  StepTiming lastStepTiming();

  std::vector<CudaBackend *> backends; ///< by device index; null for cpu devices
  std::vector<int> physical;
  bool timing = false;
};

/// What an Executor needs to run `plan` on GPUs.
struct CudaRun {
  BackendFactory factory;               ///< CUDA for gpu:N, CPU for cpu:N
  std::unique_ptr<Transport> transport; ///< a CudaTransport
  std::shared_ptr<CudaRunInfo> info;
  /// For the user, printed once (by rank 0): how the run differs from what
  /// the flags ask for, e.g. GPU data between ranks going through host
  /// memory. Empty when there is nothing to say.
  std::string note;
};

/// Checks the GPUs (resolvePhysicalDevices), enables peer access between
/// the physical GPUs in use where possible, and returns the factory and
/// transport. Throws UserError when the plan cannot run here.
CudaRun prepareCudaRun(const plan::Plan &plan, const CudaOptions &options);

/// The same for one rank of a job: device d runs on rank rankOf[d]. Only
/// this rank's devices get GPUs: the k-th gpu device it hosts takes GPU
/// `first + k` of its host, `first` counting the gpu devices of the lower
/// ranks on the same host (--device-map still names a device's GPU). The
/// job's GPU devices form one NCCL communicator (rank 0 makes the unique id,
/// `group` carries it), which carries the channels between GPU devices of
/// different ranks; when it cannot (two of the job's GPU devices share a
/// GPU, or no NCCL in the build) those channels go through host memory over
/// the group's transport, and CudaRun::note says so. Collective: every rank
/// calls it. With one rank it is prepareCudaRun(plan, options). Throws
/// UserError naming the rank and device when a GPU is missing.
CudaRun prepareCudaRun(const plan::Plan &plan, const CudaOptions &options,
                       const std::vector<int> &rankOf, job::ProcessGroup &group);

} // namespace mpc::runtime::cuda
