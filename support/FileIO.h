//===- support/FileIO.h - bounded reads and atomic writes ---------------===//
//
// Every file mpc writes (-o outputs, checkpoints, npy outputs) is written to a
// temporary file beside the target and renamed into place, so an interrupted
// or failed command never leaves a half-written file behind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpc {

/// Reads a whole file. Throws UserError naming the file when it cannot be
/// opened or is larger than `maxBytes`.
std::vector<uint8_t> readFileBytes(const std::string &path,
                                   uint64_t maxBytes = uint64_t(16) << 30);
std::string readFileText(const std::string &path,
                         uint64_t maxBytes = uint64_t(1) << 30);

/// Writes `size` bytes to `path` atomically (temp file in the same folder,
/// fsync, rename). Throws UserError naming the file on failure; the target is
/// left untouched then.
void writeFileAtomic(const std::string &path, const void *data, size_t size);
inline void writeFileAtomic(const std::string &path, const std::string &text) {
  writeFileAtomic(path, text.data(), text.size());
}

} // namespace mpc
