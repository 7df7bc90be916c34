//===- runtime/mpi/MpiCheck.h - MPI return codes as exceptions ----------===//
//
// Every communicator mpc creates uses MPI_ERRORS_RETURN, so a failed MPI call
// comes back as a code; mpiCheck turns it into an InternalError that names
// the call and MPI's own description.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Error.h"

#include <mpi.h>

#include <algorithm>
#include <string>

namespace mpc::runtime::mpi {

inline void mpiCheck(int rc, const std::string &what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw InternalError(what + " failed: " + std::string(text, size_t(len)));
}

/// MPI counts are ints: large buffers go as several messages of at most
/// this many bytes, in order (MPI never reorders messages of one tag).
constexpr size_t kMaxChunk = size_t(1) << 30;

inline size_t chunkCount(size_t bytes) { return bytes == 0 ? 1 : (bytes + kMaxChunk - 1) / kMaxChunk; }

/// Calls f(chunk index, offset, length) for each chunk of a `bytes`-byte
/// message (one empty chunk for an empty message).
template <typename F> void forEachChunk(size_t bytes, F &&f) {
  for (size_t c = 0, chunks = chunkCount(bytes); c < chunks; ++c) {
    size_t off = c * kMaxChunk;
    f(c, off, std::min(kMaxChunk, bytes - off));
  }
}

} // namespace mpc::runtime::mpi
