//===- runtime/job/FailFast.h - one rank's error ends the job ----------===//
//
// MPI's model is fail-stop: a rank blocked in a receive from a rank that
// stopped never returns on its own. So in a job of several ranks, an error
// is printed where it happens, prefixed with the rank and the devices it
// hosts ("rank 1 (cpu:2): data.npy: error: ..."), and the rank then ends
// every process of the job (abortJob). A
// start-up mismatch that every rank detects alike (AgreedError) is printed
// once, by rank 0, and every rank exits 1 in order.
//
// In a one-process run errors propagate to the driver as they always did.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/job/ProcessGroup.h"

#include <functional>
#include <string>

namespace mpc::runtime::job {

/// Runs `body`. With more than one rank, an exception ends the job: exit
/// status 1 for user errors and out-of-memory, 2 for internal errors.
/// `whoAmI` names this rank in the message ("rank 1 (cpu:2, cpu:3)"); it is
/// called only on failure. `command` ("mpc run") starts the closing line.
void runOrEndJob(ProcessGroup &group, const std::string &command,
                 const std::function<void()> &body, const std::function<std::string()> &whoAmI);

} // namespace mpc::runtime::job
