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
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // below, with every other file that is not regular, before any read.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw UserError(path, "", std::string("cannot open file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError(path, "", S_ISDIR(st.st_mode) ? "is a folder, not a file"
                                                  : "not a regular file (a device, FIFO or "
                                                    "socket); mpc reads only regular files");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
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

/// A file's identity, for "the same file under another name".
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId &) const = default;
};
bool fileId(const std::string &path, FileId &id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  id = {st.st_dev, st.st_ino};
  return true;
}

} // namespace

std::string resolveWriteTarget(const std::string &path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(size_t(st.st_size > 0 ? st.st_size : 4095) + 1);
    ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0) return p;
    std::string link(buf.data(), size_t(n));
    auto [dir, name] = splitPath(p);
    p = link.starts_with('/') || dir == "." ? link : dir + "/" + link;
  }
  throw UserError(path, "", "too many levels of symbolic links");
}

void checkOutputTargets(const std::vector<OutputTarget> &targets,
                        const std::vector<std::string> &inputs) {
  std::vector<std::pair<FileId, std::string>> inputIds;
  for (const std::string &in : inputs) {
    FileId id;
    if (fileId(in, id)) inputIds.push_back({id, in});
  }
  // Each target's (folder, name), to find two targets naming one file.
  std::vector<std::pair<std::pair<FileId, std::string>, const OutputTarget *>> seen;
  for (const OutputTarget &t : targets) {
    auto bad = [&](const std::string &what) { throw UserError(t.path, t.flag, what); };
    if (t.path.empty()) throw UserError("", t.flag, "is empty: name the file to write");
    std::string real = resolveWriteTarget(t.path);
    auto [dir, name] = splitPath(real);
    struct stat st {};
    bool exists = ::stat(real.c_str(), &st) == 0;
    // First, so that "." and "out/" say what they are.
    if (exists && S_ISDIR(st.st_mode)) bad("is a folder; name a file in it");
    if (name.empty() || name == "." || name == "..") bad("not a file name");
    if (exists) {
      if (!S_ISREG(st.st_mode))
        bad("is not a regular file (a device, FIFO or socket); mpc writes only regular files");
      for (const auto &[id, in] : inputIds)
        if (id == FileId{st.st_dev, st.st_ino})
          bad(in == t.path ? "is also an input of this command; writing it would destroy it"
                           : "is the same file as the input " + in +
                                 "; writing it would destroy it");
    }
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0)
      bad("folder " + dir + " cannot be used: " + std::strerror(errno));
    if (!S_ISDIR(dst.st_mode)) bad(dir + " is not a folder");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      bad("folder " + dir + " is not writable: " + std::strerror(errno));
    std::pair<FileId, std::string> key{{dst.st_dev, dst.st_ino}, name};
    for (const auto &[other, by] : seen)
      if (other == key) bad("is also written by " + by->flag + " (" + by->path + ")");
    seen.push_back({key, &t});
  }
}

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

void writeFileAtomic(const std::string &userPath, const void *data, size_t size) {
  // A link is written through; a device, FIFO or folder is never replaced.
  const std::string path = resolveWriteTarget(userPath);
  auto [dir, name] = splitPath(path);
  if (name.empty()) throw UserError(userPath, "", "not a file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw UserError(userPath, "", S_ISDIR(st.st_mode) ? "is a folder; name a file in it"
                                                      : "is not a regular file (a device, FIFO or "
                                                        "socket); mpc writes only regular files");
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
