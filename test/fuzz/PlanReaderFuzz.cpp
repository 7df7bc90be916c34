//===- test/fuzz/PlanReaderFuzz.cpp - fuzz target for the plan reader ----===//
//
// Any byte string given to the plan.bin reader must end in a verified plan or
// a UserError: never a crash, a hang, an unchecked allocation or a sanitizer
// report. An accepted plan must serialise back to the same bytes. Each input
// is read as it is and again with its checksum made right, so mutations
// reach past the checksum into the decoder and the verifier.
//
//===----------------------------------------------------------------------===//
#include "plan/PlanFormat.h"
#include "plan/PlanIO.h"
#include "support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/// Reads `data` as a plan: a verified plan or a UserError; an accepted plan
/// must serialise back to itself.
void readOne(const uint8_t *data, size_t size) {
  mpc::plan::Plan plan;
  try {
    plan = mpc::plan::deserializePlan(data, size, "fuzz.bin");
  } catch (const mpc::UserError &) {
    return;
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
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace plan = mpc::plan;
  readOne(data, size);
  // Almost every mutation breaks the checksum, which the reader checks
  // first; the same bytes with the checksum made right reach the decoder
  // and the verifier behind it.
  if (size >= plan::kHeaderSize) {
    std::vector<uint8_t> sealed(data, data + size);
    plan::storeLE(sealed.data() + plan::kHeaderChecksumOffset,
                  plan::planChecksum(sealed.data() + plan::kHeaderSize, size - plan::kHeaderSize), 8);
    readOne(sealed.data(), sealed.size());
  }
  return 0;
}
