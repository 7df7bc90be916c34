//===- test/unit/ir/FrontendModels.h - models shared by the frontend tests -===//
//
// The seed model of the project (examples/regression3), verbatim: the reader
// must accept it unchanged, and the round-trip, printer and verifier tests
// start from it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/JsonReader.h"
#include "support/Error.h"
#include "test/unit/SeedModel.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace mpc::test {

/// Reads a model that must be valid.
inline std::unique_ptr<ir::Graph> readModel(const std::string &text) {
  return ir::readModelJson(text, "model.json");
}

/// The full error line for a model that must be rejected, or a test failure.
inline std::string readError(const std::string &text) {
  try {
    ir::readModelJson(text, "model.json");
  } catch (const UserError &e) {
    return e.what();
  }
  ADD_FAILURE() << "model was accepted:\n" << text;
  return "";
}

} // namespace mpc::test
