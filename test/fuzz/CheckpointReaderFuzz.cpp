//===- test/fuzz/CheckpointReaderFuzz.cpp - fuzz target for checkpoints --===//
//
// Any byte string given as a checkpoint must end in a checkpoint that
// --resume accepts for the seed plan, or in a UserError: never a crash, a
// hang, an unchecked allocation or a sanitizer report. Each input goes
// through the reader (safetensors, then the training metadata) and, when
// resumable, through every check --resume makes against the plan, with and
// without --force. The corpus holds checkpoints of that plan, so the
// "same plan" branch (damage) is reached as well as the "other plan" one.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "io/Checkpoint.h"
#include "plan/PlanFormat.h"
#include "plan/PlanIO.h"
#include "runtime/train/Resume.h"
#include "support/Error.h"
#include "SeedModel.h"

#include <cstdint>

namespace {

struct SeedPlan {
  mpc::plan::Plan plan;
  uint64_t checksum = 0;
};

/// The seed model compiled as `mpc compile` compiles it, and the checksum
/// its plan.bin carries (what checkpoints record).
const SeedPlan &seedPlan() {
  static const SeedPlan seed = [] {
    SeedPlan s;
    s.plan = mpc::compiler::compileModel(kSeedModelJson);
    std::vector<uint8_t> bytes = mpc::plan::serializePlan(s.plan);
    s.checksum = mpc::plan::loadLE(bytes.data() + mpc::plan::kHeaderChecksumOffset, 8);
    return s;
  }();
  return seed;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const SeedPlan &seed = seedPlan();
  mpc::io::Checkpoint ckpt;
  try {
    ckpt = mpc::io::parseCheckpoint(data, size, "fuzz.safetensors");
  } catch (const mpc::UserError &) {
    return 0;
  }
  for (bool force : {false, true}) {
    try {
      mpc::runtime::checkCheckpoint(seed.plan, ckpt, seed.checksum, force);
    } catch (const mpc::UserError &) {
    }
  }
  return 0;
}
