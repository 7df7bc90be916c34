//===- runtime/job/ProcessGroup.h - the processes of one job -----------===//
//
// A plan can run in one process or be spread over the ranks of an MPI job
// (`mpirun -np R mpc run ...`). The layers above (the trainer) see the job
// through this interface only: how many ranks there are, which one this is,
// a collective to compare start-up records, point-to-point byte moves for
// gathering tensors to rank 0 between steps, a Transport for the plan's
// sends and receives, and a way to end the whole job.
//
// LocalGroup (here) is the single process; runtime/mpi/ has the MPI one.
// Nothing in this folder includes MPI.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/Backend.h"
#include "support/Error.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mpc::runtime::job {

class ProcessGroup {
public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// This rank's index among the job's processes on the same host (the GPU
  /// it takes when each rank drives its own), and how many share the host.
  virtual int localRank() const { return rank(); }
  virtual int localSize() const { return size(); }
  /// "mpirun (OpenMPI 4.1.4)" or "one process": for --help and messages.
  virtual std::string describe() const = 0;

  /// Collective: every rank passes its record and gets all of them, indexed
  /// by rank.
  virtual std::vector<std::string> allGather(const std::string &mine) = 0;
  /// Blocking point-to-point moves outside steps (gathers to rank 0). The
  /// receiver must know `bytes`.
  virtual void sendBytes(int to, const void *data, size_t bytes) = 0;
  virtual void recvBytes(int from, void *data, size_t bytes) = 0;

  /// The transport for `plan` when device d runs on rank rankOf[d]:
  /// in-process channels between this rank's devices, messages between
  /// ranks otherwise.
  virtual std::unique_ptr<Transport> makeTransport(const plan::Plan &plan,
                                                   const std::vector<int> &rankOf) = 0;

  /// Ends every process of the job with exit status `code`, now. The caller
  /// has printed why. Never returns.
  [[noreturn]] virtual void abortJob(int code) = 0;
  /// Ends this process with exit status `code` after an orderly shutdown of
  /// the group; every rank calls it together (an error all ranks detected
  /// alike). Never returns.
  [[noreturn]] virtual void exitJob(int code) = 0;
};

/// The single process: rank 0 of 1, in-process channels.
std::unique_ptr<ProcessGroup> makeLocalGroup();

/// The environment variable by which an MPI launcher (mpirun, mpiexec,
/// srun) marked this process as a rank of a job: Open MPI's
/// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, PMI's PMI_RANK or PMI_SIZE
/// (MPICH, Intel MPI, Slurm), MVAPICH's MV2_COMM_WORLD_RANK; "" when none
/// did. Such a process must join the job (runtime/mpi/MpiJob.h) or fail:
/// the other ranks wait for it in MPI_Init until it does or its exit
/// status ends the job.
std::string launcherVariable();

/// A UserError that every rank detects identically (a start-up mismatch):
/// printed once, by rank 0, and every rank exits 1 together.
class AgreedError : public UserError {
public:
  using UserError::UserError;
};

} // namespace mpc::runtime::job
