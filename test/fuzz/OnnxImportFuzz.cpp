//===- test/fuzz/OnnxImportFuzz.cpp - fuzz target for ONNX models ---------===//
//
// Any byte string given as an ONNX model must end in an mpc model or a
// UserError, imported for inference and for training (a softmax
// cross-entropy loss on its output): never a crash, a hang, a sanitizer
// report or an internal error (the import reports a shape on which ONNX's
// inference and mpc's rules disagree as one). Symbolic dimensions are left
// unset: the import refuses them with a UserError.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/Import.h"
#include "support/Error.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace ox = mpc::frontend::onnx;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  for (bool inference : {true, false}) {
    ox::ImportOptions opt;
    opt.training.inference = inference;
    if (!inference) opt.training.loss = "softmax_cross_entropy";
    try {
      ox::importOnnxBytes(bytes, "fuzz.onnx", opt);
    } catch (const mpc::UserError &) {
    }
  }
  return 0;
}
