//===- test/fuzz/PlanReaderFuzz.cpp - fuzz target for the plan reader ----===//
//
// Any byte string given to the plan.bin reader must end in a verified plan or
// a UserError: never a crash, a hang, an unchecked allocation or a sanitizer
// report. An accepted plan must serialise back to the same bytes.
//
//===----------------------------------------------------------------------===//
#include "plan/PlanIO.h"
#include "support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpc::plan::Plan plan;
  try {
    plan = mpc::plan::deserializePlan(data, size, "fuzz.bin");
  } catch (const mpc::UserError &) {
    return 0;
  }
  std::vector<uint8_t> bytes = mpc::plan::serializePlan(plan);
  if (bytes.size() != size || std::memcmp(bytes.data(), data, size) != 0) {
    // Accepted input that is not in canonical form: it must at least decode
    // to the same plan again.
    mpc::plan::Plan again = mpc::plan::deserializePlan(bytes.data(), bytes.size(), "fuzz.bin");
    if (mpc::plan::serializePlan(again) != bytes) {
      std::fprintf(stderr, "plan does not survive a second round trip\n");
      std::abort();
    }
  }
  return 0;
}
