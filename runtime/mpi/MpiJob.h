//===- runtime/mpi/MpiJob.h - joining an MPI job -------------------------===//
//
// `mpirun -np R mpc run plan.bin ...` starts R processes; each calls
// joinJob(), which initialises MPI (MPI_THREAD_MULTIPLE: every device worker
// sends and receives on its own thread, see MpiTransport.h) and returns the
// job's ProcessGroup. A process not started by an MPI launcher gets the
// one-process group and never touches MPI, so a plain `mpc run` stays what
// it was.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/job/ProcessGroup.h"

#include <memory>

namespace mpc::runtime::mpi {

/// The group of this process: MPI's COMM_WORLD when an MPI launcher
/// started it (job::launcherVariable()), else the one-process group.
/// Throws UserError when MPI cannot give what the runtime needs
/// (MPI_THREAD_MULTIPLE). MPI is finalised when the group is destroyed.
std::unique_ptr<job::ProcessGroup> joinJob();

} // namespace mpc::runtime::mpi
