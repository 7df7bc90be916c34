//===- test/unit/passes/PassTestUtil.h - helpers for the pass tests -----===//
//
// Graphs come from JSON literals through the reader; pipelines run pass by
// pass with the verifier after each one, so a test fails with the verifier's
// message as soon as a pass breaks an invariant it claims.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/JsonReader.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/PassRegistry.h"
#include "test/unit/SeedModel.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>

namespace mpc::test {

/// Fan-out (t feeds u and r), broadcasting (b [3] and s [1] against [4,3]),
/// a parameter used on two devices (w on g0 and g2) and nodes without
/// annotations.
inline const char *kFanoutModel = R"json({
  "mpc": 1,
  "name": "fanout",
  "inputs": { "x": {"shape": [4, 3]}, "y": {"shape": [4, 1]} },
  "params": {
    "w": {"shape": [3, 3], "init": {"uniform": {"low": -0.8, "high": 0.8}}, "device": "g0"},
    "b": {"shape": [3],    "init": {"normal": {"mean": 0.1, "std": 0.3}},   "device": "g0"},
    "s": {"shape": [1],    "init": {"constant": 0.7},                       "device": "g1"},
    "v": {"shape": [3, 1], "init": {"xavier": {"magnitude": 3}},            "device": "g2"}
  },
  "nodes": [
    {"name": "h", "op": "matmul",  "inputs": ["x", "w"], "device": "g0"},
    {"name": "a", "op": "add",     "inputs": ["h", "b"]},
    {"name": "t", "op": "tanh",    "inputs": ["a"], "device": "g1"},
    {"name": "u", "op": "mul",     "inputs": ["t", "s"]},
    {"name": "r", "op": "add",     "inputs": ["t", "u"]},
    {"name": "k", "op": "neg", "inputs": ["u"]},
    {"name": "q", "op": "matmul",  "inputs": ["r", "w"], "device": "g2"},
    {"name": "e", "op": "sub",     "inputs": ["q", "k"]},
    {"name": "m", "op": "sigmoid", "inputs": ["e"]},
    {"name": "p", "op": "matmul",  "inputs": ["m", "v"]},
    {"name": "loss", "op": "mse_loss", "inputs": ["p", "y"]}
  ],
  "loss": "loss",
  "outputs": ["p"],
  "optimizer": {"sgd": {"lr": 0.1, "momentum": 0.9}}
})json";

inline std::unique_ptr<ir::Graph> parse(const std::string &json) {
  return ir::readModelJson(json, "model.json");
}

/// Runs "a,b,c" on `g`, verifying after every pass.
inline void runPasses(ir::Graph &g, const std::string &pipeline,
                      const passes::PassOptions &options = {}) {
  passes::PassContext ctx;
  ctx.options = options;
  std::ostringstream log;
  ctx.log = &log;
  std::stringstream ss(pipeline);
  std::string name;
  while (std::getline(ss, name, ',')) {
    passes::createPass(name)->run(g, ctx);
    std::vector<std::string> problems = ir::verifyGraph(g);
    std::string all;
    for (const std::string &p : problems) all += p + "\n";
    ASSERT_TRUE(problems.empty()) << "after " << name << ":\n" << all;
  }
}

inline const char *kTrainingPipeline =
    "infer-shapes,place,insert-copies,autodiff,insert-copies,optimize-step";
inline const char *kGradientPipeline = "infer-shapes,place,insert-copies,autodiff,insert-copies";

} // namespace mpc::test
