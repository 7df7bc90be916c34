//===- test/fuzz/JsonReaderFuzz.cpp - fuzz target for the model reader ---===//
//
// Any byte string given to the JSON model reader must end in a graph or a
// UserError: never a crash, a hang, a sanitizer report or an internal error.
// A graph that is accepted and verifies must read back equal after a write. Built as a libFuzzer target with -DMPC_BUILD_FUZZERS=ON (Clang), and
// always as a replay executable that ctest runs over a corpus.
//
//===----------------------------------------------------------------------===//
#include "ir/JsonReader.h"
#include "ir/JsonWriter.h"
#include "ir/Verifier.h"
#include "support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::unique_ptr<mpc::ir::Graph> graph;
  try {
    graph = mpc::ir::readModelJson(text, "fuzz.json");
  } catch (const mpc::UserError &) {
    return 0;
  }
  // A file may claim stages ("placed", "copies-explicit") it does not meet;
  // the pass manager verifies every input before the first pass and reports
  // that as a user error, so such a graph ends here too.
  if (!mpc::ir::verifyGraph(*graph).empty()) return 0;
  std::string written = mpc::ir::writeModelJson(*graph);
  auto again = mpc::ir::readModelJson(written, "fuzz-roundtrip.json");
  std::string diff = mpc::ir::diffGraphs(*graph, *again);
  if (!diff.empty()) {
    std::fprintf(stderr, "round trip changed the graph: %s\n", diff.c_str());
    std::abort();
  }
  return 0;
}
