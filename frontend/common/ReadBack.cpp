//===- frontend/common/ReadBack.cpp - an emitted model, read back ----------===//
#include "frontend/common/ReadBack.h"

#include "ir/JsonReader.h"
#include "support/Error.h"

namespace mpc::frontend {

std::unique_ptr<ir::Graph> readBackOrMessage(const std::string &text, const std::string &file,
                                             std::string &where, std::string &what) {
  try {
    return ir::readModelJson(text, file);
  } catch (const UserError &e) {
    where = e.where();
    what = "the emitted mpc model is invalid: " + (where.empty() ? "" : where + ": ") + e.message();
    return nullptr;
  }
}

} // namespace mpc::frontend
