//===- runtime/job/FailFast.cpp - one rank's error ends the job --------===//
#include "runtime/job/FailFast.h"

#include "support/Error.h"

#include <cerrno>
#include <iostream>
#include <new>
#include <unistd.h>

namespace mpc::runtime::job {

namespace {

/// Writes `text` to stderr in one write(2): mpirun merges the ranks' stderr
/// pipes, and a message written piecemeal could be interleaved with another
/// rank's (a write of under PIPE_BUF bytes to a pipe is atomic).
void writeWhole(const std::string &text) {
  std::cerr.flush();
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    p += n;
    left -= size_t(n);
  }
}

} // namespace

void runOrEndJob(ProcessGroup &group, const std::string &command,
                 const std::function<void()> &body, const std::function<std::string()> &whoAmI) {
  if (group.size() == 1) {
    body();
    return;
  }
  std::string message;
  int code = 1;
  try {
    body();
    return;
  } catch (const AgreedError &e) {
    if (group.rank() == 0) writeWhole(std::string(e.what()) + "\n");
    group.exitJob(1);
  } catch (const UserError &e) {
    message = e.what();
  } catch (const std::bad_alloc &) {
    message = "error: out of memory";
  } catch (const InternalError &e) {
    message = std::string("internal error: ") + e.what();
    code = 2;
  } catch (const std::exception &e) {
    message = std::string("internal error: ") + e.what();
    code = 2;
  }
  std::string who = whoAmI();
  writeWhole(who + ": " + message + "\n" + command + ": " + who +
             " ends the job (every rank stops)\n");
  group.abortJob(code);
}

} // namespace mpc::runtime::job
