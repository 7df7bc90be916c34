//===- runtime/dist/FailFast.cpp - one rank's error ends the job --------===//
#include "runtime/dist/FailFast.h"

#include "support/Error.h"

#include <iostream>
#include <new>

namespace mpc::runtime::dist {

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
    if (group.rank() == 0) std::cerr << e.what() << std::endl;
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
  std::cerr << who << ": " << message << "\n"
            << command << ": " << who << " ends the job (every rank stops)" << std::endl;
  group.abortJob(code);
}

} // namespace mpc::runtime::dist
