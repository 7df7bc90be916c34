//===- plan/CostModel.h - what each instruction of a plan should cost -----===//
//
// The one cost model of the project, priced on a plan's instructions so that
// the compiler (`mpc compile --stats`, auto micro-batching,
// `--trace-predicted`) and the runtime (`mpc run --profile`) ask the same
// formulas:
//   * a kernel takes flops/F + bytes/B seconds: its op's FLOP count from the
//     op table (OpSchema::flopCount) over its buffers' types, and the bytes
//     of its operands and result, with F = 10 GFLOP/s and B = 10 GB/s; a
//     matmul with m result rows at m / (m + 28) of F (kGemmRowOverhead);
//   * a transfer's message arrives bytes/B plus a fixed 5 µs after its send;
//   * a collective over R devices: every member sends and receives R-1
//     messages per phase, each of about bytes/R, so a phase costs
//     ·α + (R-1)/R·bytes·β, plus the member's additions for a reducing
//     phase; α (latency per message) and β (seconds per byte) per transport.
// The constants are rough figures of this project's machines (a CPU core):
// only ratios matter to the compiler (the bubble, the share of a collective
// that backward hides), and they keep compute- and memory-bound kernels and
// the transports in proportion. `mpc run --profile` sets the measured
// figures next to them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/OpKind.h"
#include "plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mpc::plan {

/// The cost model's device: FLOPs and bytes per second.
inline constexpr double kModelFlopsPerSecond = 1e10;
inline constexpr double kModelBytesPerSecond = 1e10;
/// The fixed latency of one transfer's message.
inline constexpr double kModelTransferLatency = 5e-6;
/// A matmul of m result rows runs at m / (m + kGemmRowOverhead) of the
/// model's FLOP rate: a per-call cost that grows with the right operand
/// (sgemm packs it on every call), not with the rows. Measured with
/// OpenBLAS's SkylakeX sgemm, one thread, a 1024 x 1024 right operand, as
/// a share of its rate at 1024 and 2048 rows (about 180 GFLOP/s):
/// 0.69-0.74 at 64 rows, 0.77-0.87 at 128, 0.93-0.98 at 256, 0.94-1.0 at
/// 512; the formula gives 0.70, 0.82, 0.90 and 0.95. It is what makes
/// splitting a batch into ever more micro-batches stop paying
/// (--microbatches=auto).
inline constexpr double kGemmRowOverhead = 28;

enum class CollectiveTransport {
  InProcess, ///< devices on threads of one process (runtime/Channel.h)
  Mpi,       ///< devices on different ranks (runtime/mpi/)
  Nccl,      ///< GPU groups
};

/// The transport the cost model prices a collective of device `device` on
/// when nothing else is known: NCCL for "gpu:N", in-process otherwise.
CollectiveTransport defaultTransport(const std::string &device);

/// Kernel instruction `in` of `program`: its FLOPs by its op's cost rule
/// (0 for an op the table does not know or broken buffer ids).
double kernelFlops(const DeviceProgram &program, const Instr &in);

/// The bytes kernel instruction `in` reads and writes (operands and result).
double kernelBytes(const DeviceProgram &program, const Instr &in);

/// Seconds for kernel instruction `in` of `program`.
double kernelSeconds(const DeviceProgram &program, const Instr &in);

/// Seconds from a send of `bytes` bytes to its message's arrival.
double transferSeconds(uint64_t bytes);

/// Seconds for one member to run collective `kind` over `groupSize`
/// devices whose split tensor has `bytes` bytes (ops::collectiveElements).
double collectiveSeconds(ops::OpKind kind, size_t groupSize, uint64_t bytes,
                         CollectiveTransport t);

/// The same for collective instruction `in` of device `device` (`program`
/// its list) of a verified plan.
double collectiveSeconds(const DeviceProgram &program, uint32_t device, const Instr &in,
                         CollectiveTransport t);

} // namespace mpc::plan
