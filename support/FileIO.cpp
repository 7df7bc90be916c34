//===- support/FileIO.cpp - bounded reads and crash-safe writes ---------===//
//
// writeFileAtomic, step by step, and what a SIGKILL at each point leaves:
//   1. open(dir, O_TMPFILE): an unnamed inode; a kill leaves nothing (the
//      kernel frees it with the last descriptor);
//   2. write + fsync the data: still unnamed;
//   3. linkat(/proc/self/fd/N -> PATH.tmp.PID): the data gets a name. A kill
//      between 3 and 4 leaves that name; the next write of PATH removes it
//      (its PID no longer runs);
//   4. rename(PATH.tmp.PID -> PATH): atomic replacement of the old file;
//   5. fsync(dir): the rename is durable across a power loss.
// Filesystems without O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels) take the
// classic path: create PATH.tmp.PID directly, write, fsync, rename; a kill
// during the write leaves the named temporary, removed the same way.
//
//===----------------------------------------------------------------------===//
#include "support/FileIO.h"

#include "support/Error.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mpc {

std::vector<uint8_t> readFileBytes(const std::string &path, uint64_t maxBytes) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw UserError(path, "", std::string("cannot open file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError(path, "", "not a regular file");
  }
  if (uint64_t(st.st_size) > maxBytes) {
    ::close(fd);
    throw UserError(path, "", "file too large (" + std::to_string(st.st_size) + " bytes)");
  }
  std::vector<uint8_t> data(size_t(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw UserError(path, "", "read failed");
    }
    done += size_t(n);
  }
  ::close(fd);
  return data;
}

std::string readFileText(const std::string &path, uint64_t maxBytes) {
  auto bytes = readFileBytes(path, maxBytes);
  return std::string(bytes.begin(), bytes.end());
}

namespace {

/// The folder holding `path` ("." for a bare name) and the name inside it.
std::pair<std::string, std::string> splitPath(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

[[noreturn]] void fail(const std::string &path, const std::string &what, int err) {
  throw UserError(path, "", what + ": " + std::strerror(err));
}

/// Writes all bytes, retrying short writes and EINTR; returns errno or 0.
int writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += size_t(n);
  }
  return 0;
}

/// fsync of the folder, so that a rename into it survives a power loss.
void syncDir(const std::string &dir, const std::string &path) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail(path, "cannot open its folder to sync it", errno);
  // Some filesystems refuse fsync on folders (EINVAL): nothing to make durable then.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int err = errno;
    ::close(fd);
    fail(path, "cannot sync its folder", err);
  }
  ::close(fd);
}

} // namespace

std::string atomicTempName(const std::string &path, long pid) {
  return path + ".tmp." + std::to_string(pid);
}

std::vector<std::string> removeStaleTemporaries(const std::string &path) {
  auto [dir, name] = splitPath(path);
  std::vector<std::string> removed;
  DIR *d = ::opendir(dir.c_str());
  if (!d) return removed;
  std::string prefix = name + ".tmp.";
  while (struct dirent *e = ::readdir(d)) {
    std::string entry = e->d_name;
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    std::string digits = entry.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    long pid = std::strtol(digits.c_str(), nullptr, 10);
    if (pid <= 0 || pid == long(::getpid())) continue;
    // A process still running may be between its linkat and its rename.
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    std::string full = (dir == "." && path.find('/') == std::string::npos ? "" : dir + "/") + entry;
    if (::unlink(full.c_str()) == 0) removed.push_back(full);
  }
  ::closedir(d);
  return removed;
}

void writeFileAtomic(const std::string &path, const void *data, size_t size) {
  auto [dir, name] = splitPath(path);
  if (name.empty()) throw UserError(path, "", "not a file name");
  removeStaleTemporaries(path);
  std::string tmp = atomicTempName(path, long(::getpid()));

  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  bool unnamed = fd >= 0;
  if (!unnamed) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      fail(path, "cannot write file", errno);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail(path, "cannot write file", errno);
  }
  auto abandon = [&](const std::string &what, int err) {
    ::close(fd);
    if (!unnamed) ::unlink(tmp.c_str());
    fail(path, what, err);
  };
  if (int err = writeAll(fd, data, size)) abandon("write failed", err);
  if (::fsync(fd) != 0) abandon("write failed (fsync)", errno);
  if (unnamed) {
    // linkat through /proc names the unnamed file without copying it; it
    // cannot replace a name, so our own PID's leftover (a killed process
    // whose PID we reuse) goes first.
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    ::unlink(tmp.c_str());
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0)
      abandon("cannot name the written data", errno);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "write failed (close)", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot rename into place", err);
  }
  syncDir(dir, path);
}

} // namespace mpc
