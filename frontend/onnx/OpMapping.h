//===- frontend/onnx/OpMapping.h - one table entry per ONNX op -------------===//
//
// Each ONNX op mpc imports is one OpMapping: its op type, a summary for the
// supported-op list (docs/import-onnx.md), and a function that reads the
// node's attributes with ONNX's defaults for the model's opset and emits
// mpc nodes through a MapContext. Inputs known at import (constants) reach
// a mapping as values it can read; data inputs as mpc values.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ReadBack.h"
#include "frontend/onnx/Constant.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpc::frontend::onnx {


class MapContext {
public:
  virtual ~MapContext() = default;
  virtual const ::onnx::NodeProto &node() const = 0;
  virtual const Attrs &attrs() const = 0;
  virtual int64_t opset() const = 0;
  /// Input i is given (not omitted, not the empty name).
  virtual bool has(size_t i) const = 0;
  /// Input i's value when known at import, else null.
  virtual const Const *constant(size_t i) = 0;
  /// Input i as data: an emitted value, an input or parameter (an
  /// initializer), or a constant made a value (a fill when uniform, else a
  /// frozen parameter).
  virtual Value data(size_t i) = 0;
  /// Input i, an initializer, as a running statistic (batch norm): its name.
  virtual std::string runningStat(size_t i) = 0;
  /// Output k is used by another node or is a graph output.
  virtual bool outputUsed(size_t k) const = 0;
  /// The mpc name of output k, and of a helper value of this node.
  virtual std::string outName(size_t k) const = 0;
  virtual std::string tmpName(const std::string &suffix) const = 0;
  /// Emits an mpc node named `name` on the node's device group.
  virtual Value emit(const std::string &name, const std::string &op, std::vector<Value> inputs,
                     nlohmann::ordered_json attrs, Shape shape, bool i32 = false) = 0;
  /// A training model (not --inference).
  virtual bool training() const = 0;
  /// Throws UserError naming the file and node.
  [[noreturn]] virtual void fail(const std::string &msg) const = 0;
};

struct OpMapping {
  std::string op;
  std::string summary; ///< the mpc ops it becomes
  /// The node's outputs, in order (only those the op has).
  std::vector<Value> (*map)(MapContext &ctx);
};

/// The entry for an ONNX op type; nullptr when unsupported.
const OpMapping *findOpMapping(const std::string &op);
/// Every entry, sorted by op type.
std::vector<const OpMapping *> allOpMappings();

} // namespace mpc::frontend::onnx
