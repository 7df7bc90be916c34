//===- test/fuzz/NpyReaderFuzz.cpp - fuzz target for the NPY reader ------===//
//
// Any byte string given to the NPY reader must end in an array or a
// UserError: never a crash, a hang, an unchecked allocation or a sanitizer
// report. An accepted array must write back and read back equal.
//
//===----------------------------------------------------------------------===//
#include "io/Npy.h"
#include "support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpc::io::NpyArray a;
  try {
    a = mpc::io::parseNpy(data, size, "fuzz.npy");
  } catch (const mpc::UserError &) {
    return 0;
  }
  std::vector<uint8_t> bytes = mpc::io::encodeNpy(a.dtype, a.shape, a.data.data());
  mpc::io::NpyArray b = mpc::io::parseNpy(bytes.data(), bytes.size(), "fuzz.npy");
  if (b.dtype != a.dtype || b.shape != a.shape || b.data != a.data) {
    std::fprintf(stderr, "NPY array does not survive a round trip\n");
    std::abort();
  }
  return 0;
}
