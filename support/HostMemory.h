//===- support/HostMemory.h - how much memory this process may use ------===//
//
// Sizes that come from files (a parameter's shape, a declared array length)
// are checked against this bound before anything that large is allocated,
// so that a hostile or mistaken size is an error naming it, not an
// out-of-memory kill with nothing named.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace mpc {

/// The most bytes this process can hope to allocate: the least of the
/// machine's physical memory, the address-space and data-segment limits
/// (ulimit -v, -d) and the cgroup's memory.max, where each is set.
uint64_t hostMemoryLimit();

} // namespace mpc
