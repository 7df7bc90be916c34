//===- support/HostMemory.cpp - how much memory this process may use ----===//
#include "support/HostMemory.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace mpc {

namespace {

/// The cgroup v2 memory.max of this process's group, or 0 when there is
/// none ("max", no cgroup v2, unreadable).
uint64_t cgroupLimit() {
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return 0;
  std::ifstream max("/sys/fs/cgroup" + path + "/memory.max");
  uint64_t v = 0;
  return max >> v ? v : 0;
}

} // namespace

uint64_t hostMemoryLimit() {
  uint64_t limit = UINT64_MAX;
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = uint64_t(pages) * uint64_t(page);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit r {};
    if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
      limit = std::min(limit, uint64_t(r.rlim_cur));
  }
  if (uint64_t c = cgroupLimit()) limit = std::min(limit, c);
  return limit;
}

} // namespace mpc
