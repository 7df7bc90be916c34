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

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace mpc::test {

inline const char *kSeedModel = R"json({
  "mpc": 1,
  "name": "regression3",
  "inputs":  { "x": {"shape": [100, 2]}, "y": {"shape": [100, 1]} },
  "params": {
    "w0": {"shape": [2, 2], "init": {"xavier": {"magnitude": 2.24}}, "device": "stage0"},
    "b0": {"shape": [2],    "init": {"constant": 0.5},               "device": "stage0"},
    "w1": {"shape": [2, 2], "init": {"xavier": {"magnitude": 2.24}}, "device": "stage1"},
    "b1": {"shape": [2],    "init": {"constant": 0.5},               "device": "stage1"},
    "w2": {"shape": [2, 1], "init": {"xavier": {"magnitude": 2.24}}, "device": "stage2"},
    "b2": {"shape": [1],    "init": {"constant": 0.5},               "device": "stage2"}
  },
  "nodes": [
    {"name": "h0",   "op": "matmul",   "inputs": ["x", "w0"],  "device": "stage0"},
    {"name": "z0",   "op": "add",      "inputs": ["h0", "b0"]},
    {"name": "h1",   "op": "matmul",   "inputs": ["z0", "w1"], "device": "stage1"},
    {"name": "z1",   "op": "add",      "inputs": ["h1", "b1"]},
    {"name": "h2",   "op": "matmul",   "inputs": ["z1", "w2"], "device": "stage2"},
    {"name": "z2",   "op": "add",      "inputs": ["h2", "b2"]},
    {"name": "loss", "op": "mse_loss", "inputs": ["z2", "y"]}
  ],
  "loss": "loss",
  "outputs": ["z2"],
  "optimizer": {"adam": {"lr": 0.001}}
}
)json";

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
