//===- frontend/onnx/OnnxFile.h - an ONNX model, read and checked ----------===//
//
// Reads a .onnx file with the ONNX library's protobuf classes, fixes the
// dimensions --input gives (symbolic ones such as the batch), checks the
// model with onnx::checker, and infers every value's shape with
// onnx::shape_inference. mpc imports opsets 7 to 17 of the default domain.
// Every error names the file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ImportOptions.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mpc::frontend::onnx {

inline constexpr int64_t kMinOpset = 7, kMaxOpset = 17;

struct OnnxFile {
  std::string file;
  ::onnx::ModelProto model;
  int64_t opset = 0; ///< the default domain's
  /// Shapes after inference, by value name (dimensions unknown: -1).
  std::map<std::string, std::vector<int64_t>> shapes;
  /// Values whose shape the file itself declares (graph outputs and
  /// value_info): ONNX's inference keeps a declaration it cannot check.
  std::set<std::string> declared;
};

/// Called on the parsed model before the ONNX library checks it and infers
/// its shapes: the importer refuses ops it does not import there, so the
/// library's shape inference runs only on ops mpc knows.
using BeforeCheck = std::function<void(const OnnxFile &)>;

/// Reads, fixes the --input dimensions, checks and infers shapes. Throws
/// UserError naming the file (and the input or node).
OnnxFile readOnnxFile(const std::string &file, const std::vector<InputSpec> &inputs,
                      const BeforeCheck &beforeCheck);
/// The same from the file's bytes; `file` names it in messages.
OnnxFile parseOnnxFile(const std::string &bytes, const std::string &file,
                       const std::vector<InputSpec> &inputs, const BeforeCheck &beforeCheck);

/// The ONNX element type's name ("float", "int64").
std::string elementTypeName(int32_t type);

} // namespace mpc::frontend::onnx
