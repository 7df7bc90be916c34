//===- compiler/CompileModel.h - model JSON to plan, in process ---------===//
//
// The compiler as a library: what `mpc compile` does, in process: read a
// model, run the default training pipeline (verifier on), lower to a plan.
// Pass logs and warnings are discarded; failures throw as in the driver.
// Tests, benchmarks and tools that build plans on the fly use it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Lower.h"
#include "ir/JsonReader.h"
#include "passes/PassManager.h"

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

namespace mpc::compiler {

/// The training graph of `json` after the default pipeline.
inline std::unique_ptr<ir::Graph> compileGraph(const std::string &json,
                                               passes::PassOptions options = {}) {
  auto graph = ir::readModelJson(json, "model.json");
  std::ostringstream log;
  passes::PassContext ctx;
  ctx.options = std::move(options);
  ctx.log = &log;
  passes::Instrumentation instr;
  instr.dump = &log;
  passes::PassManager pm(ctx, instr);
  pm.addPipeline(passes::defaultPipeline(*graph, ctx.options));
  pm.run(*graph);
  return graph;
}

/// The plan of `json`, initial values drawn with `seed`.
inline plan::Plan compileModel(const std::string &json, passes::PassOptions options = {},
                               uint64_t seed = 0) {
  return codegen::lowerToPlan(*compileGraph(json, std::move(options)),
                              codegen::LowerOptions{seed});
}

} // namespace mpc::compiler
