//===- frontend/mxnet/OpMapping.h - one table entry per MXNet op ---------===//
//
// Each supported MXNet op is one OpMapping: its name (and aliases), its
// argument names in MXNet's order (they name the variables MXNet creates
// implicitly, "fc1_weight", and old per-argument annotations such as
// "weight_lr_mult"), and a function that reads the node's attributes with
// MXNet's defaults, works out the shapes MXNet would, declares which inputs
// are parameters, labels or running statistics, and emits mpc nodes through
// a MapContext. The table is docs/import-mxnet.md's op table.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ReadBack.h"
#include "frontend/mxnet/AttrParse.h"
#include "frontend/mxnet/SymbolFile.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpc::frontend::mxnet {


/// What a mapping function may do; implemented by the import driver.
class MapContext {
public:
  virtual ~MapContext() = default;
  virtual const SymbolNode &node() const = 0;
  virtual AttrReader &attrs() = 0;
  /// Inputs the node lists in the file (older files omit some; MXNet then
  /// creates variables "<node>_<arg>", and so does the import).
  virtual size_t numInputs() const = 0;
  /// Input i as data: another node's output or an --input variable.
  virtual Value data(size_t i) = 0;
  /// Input i as a trained parameter of `shape`; `init` is the mpc
  /// initialiser used when the variable's __init__ has no mpc equivalent.
  virtual Value param(size_t i, const Shape &shape, const nlohmann::ordered_json &init) = 0;
  /// Input i as a running statistic (BatchNorm's aux states): its name.
  virtual std::string aux(size_t i, const Shape &shape) = 0;
  /// Input i is not used by mpc (BatchNorm's gamma under fix_gamma): its
  /// array in a .params file is accepted and left out.
  virtual void unused(size_t i, const Shape &shape) = 0;
  /// Input i as a label fed per step: `shape` and dtype unless --input
  /// gives the variable another shape of as many elements.
  virtual Value label(size_t i, const Shape &shape, bool i32) = 0;
  /// Emits an mpc node named after this node ("" -> the node's own name,
  /// else "<node>/<suffix>") on the node's device.
  virtual Value emit(const std::string &suffix, const std::string &op, std::vector<Value> inputs,
                     nlohmann::ordered_json attrs, Shape shape, bool i32 = false) = 0;
  /// This head's training loss (a scalar).
  virtual void setLoss(const Value &loss) = 0;
  virtual bool inference() const = 0;
  /// Rows per step, from the --input shapes.
  virtual int64_t batch() const = 0;
  [[noreturn]] void fail(const std::string &msg) { attrs().failNode(msg); }
};

struct OpMapping {
  std::vector<std::string> names; ///< the op and its aliases
  std::vector<std::string> args;  ///< argument names in MXNet's order
  bool lossHead = false;
  std::string summary; ///< for the supported-op list
  Value (*map)(MapContext &ctx);
};

/// The entry for an MXNet op name (or alias); nullptr when unsupported.
const OpMapping *findOpMapping(const std::string &op);
/// "Activation, BatchNorm, ..." for error messages.
std::string supportedOpList();

} // namespace mpc::frontend::mxnet
