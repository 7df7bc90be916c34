//===- test/fuzz/SafetensorsReaderFuzz.cpp - fuzz target for safetensors -===//
//
// Any byte string given to the safetensors reader must end in tensors or a
// UserError: never a crash, a hang, an unchecked allocation or a sanitizer
// report. Accepted tensors and metadata must encode and decode back equal.
//
//===----------------------------------------------------------------------===//
#include "io/Safetensors.h"
#include "support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace io = mpc::io;
  io::SafetensorsFile f;
  try {
    f = io::parseSafetensorsFile(data, size, "fuzz.safetensors");
  } catch (const mpc::UserError &) {
    return 0;
  }
  std::vector<uint8_t> bytes = io::encodeSafetensors(f.tensors, f.metadata);
  io::SafetensorsFile g = io::parseSafetensorsFile(bytes.data(), bytes.size(), "fuzz.safetensors");
  bool same = g.metadata == f.metadata && g.tensors.size() == f.tensors.size();
  for (size_t i = 0; same && i < f.tensors.size(); ++i)
    same = g.tensors[i].name == f.tensors[i].name && g.tensors[i].dtype == f.tensors[i].dtype &&
           g.tensors[i].shape == f.tensors[i].shape && g.tensors[i].data == f.tensors[i].data;
  if (!same) {
    std::fprintf(stderr, "safetensors file does not survive a round trip\n");
    std::abort();
  }
  return 0;
}
