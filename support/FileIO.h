//===- support/FileIO.h - bounded reads and crash-safe writes -----------===//
//
// Every file mpc writes (-o outputs, checkpoints, npy outputs) replaces its
// target atomically: a reader, or a later run after a kill at any instant,
// sees either the old file or the complete new one, never a torn file, and
// no temporary file is left behind by a completed or failed write. How (see
// FileIO.cpp): the bytes go into an unnamed file in the target's folder
// (O_TMPFILE), are fsynced, then get a temporary name (linkat) that is
// renamed over the target, and the folder is fsynced. Only a kill between
// linkat and rename can leave a named temporary (TARGET.tmp.PID); the next
// write of the same target removes it once its process is gone.
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

/// Writes `size` bytes to `path` atomically and durably (file and folder
/// fsynced before returning). Removes stale temporaries of `path` left by
/// killed processes first. Throws UserError naming the file on failure; the
/// target is left untouched then, and no temporary remains.
void writeFileAtomic(const std::string &path, const void *data, size_t size);
inline void writeFileAtomic(const std::string &path, const std::string &text) {
  writeFileAtomic(path, text.data(), text.size());
}

/// The file a write of `path` replaces: `path` itself, or, when `path` is a
/// symbolic link, the file it names (followed to the end, dangling or not),
/// so that a link is written through and stays a link. Throws UserError
/// for a loop of links.
std::string resolveWriteTarget(const std::string &path);

/// A file a command is going to write, and the flag (or argument) naming it.
struct OutputTarget {
  std::string flag; ///< "--save", "-o", "--output y"
  std::string path;
};

/// Checks, before any work starts, that every target can be written, so
/// that a run never computes for nothing or destroys what the user had:
/// the name is not empty, its folder exists and is writable, and the file
/// (through links) is not an existing folder, a device, FIFO or socket, nor
/// the same file as one of `inputs`, and no two targets are the same file.
/// Throws UserError naming the flag and the path.
void checkOutputTargets(const std::vector<OutputTarget> &targets,
                        const std::vector<std::string> &inputs);

/// The name a write of `path` by process `pid` uses for the instant between
/// naming its data and renaming it into place: "PATH.tmp.PID".
std::string atomicTempName(const std::string &path, long pid);

/// Removes "PATH.tmp.PID" files in `path`'s folder whose process no longer
/// exists (left by a kill during a write); returns the paths removed.
std::vector<std::string> removeStaleTemporaries(const std::string &path);

} // namespace mpc
