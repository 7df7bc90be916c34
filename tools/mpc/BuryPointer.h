//===- tools/mpc/BuryPointer.h - keep big objects alive until exit ------===//
//
// A command that is about to end hands its large data structures (the
// training graph, the plan) here instead of destroying them: freeing a graph
// of 200k nodes allocation by allocation takes about a twentieth of
// `mpc compile`, and the operating system takes the whole heap back at exit
// at once. The pointers stay reachable from a static list, so leak checkers
// (LeakSanitizer) do not report them. The idea and the name are LLVM's
// (llvm/Support/BuryPointer.h, used by clang's -disable-free).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <vector>

namespace mpc::tool {

/// Never freed; only ever appended to, once or twice per process.
inline std::vector<const void *> &buriedPointers() {
  static auto *buried = new std::vector<const void *>;
  return *buried;
}

/// Takes ownership of `p` and never destroys it.
template <typename T> void buryPointer(std::unique_ptr<T> p) {
  buriedPointers().push_back(p.release());
}

} // namespace mpc::tool
