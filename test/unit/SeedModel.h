//===- test/unit/SeedModel.h - the seed model, for every unit suite -----===//
//
// The model of the question that started mpc (three dense layers on three
// devices), read from the shipped examples/regression3/model.json so that
// the tests exercise exactly the file users run. MPC_SOURCE_DIR is defined
// for every unit test by mpc_add_unittest.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/FileIO.h"

#include <string>

namespace mpc::test {

inline const std::string &seedModelJson() {
  static const std::string text =
      readFileText(std::string(MPC_SOURCE_DIR) + "/examples/regression3/model.json");
  return text;
}

} // namespace mpc::test
