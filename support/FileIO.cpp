//===- support/FileIO.cpp - bounded reads and atomic writes -------------===//
#include "support/FileIO.h"

#include "support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
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

void writeFileAtomic(const std::string &path, const void *data, size_t size) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    throw UserError(path, "", std::string("cannot write file: ") + std::strerror(errno));
  const char *p = static_cast<const char *>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw UserError(path, "", std::string("write failed: ") + std::strerror(err));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw UserError(path, "", "write failed");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw UserError(path, "", std::string("cannot rename into place: ") + std::strerror(err));
  }
}

} // namespace mpc
