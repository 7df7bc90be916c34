//===- frontend/mxnet/Import.h - an MXNet symbol as an mpc model ---------===//
//
// The driver of the importer: walks the symbol from its heads in operand
// order, maps each node through its OpMapping, turns variables into mpc
// inputs, params, labels or running statistics by the way they are used,
// adds the loss (from a loss head, or --loss for a symbol without one) and
// the optimizer, then validates the emitted model by reading it back with
// the ir reader (which infers every shape with mpc's own rules) and
// comparing the shapes with MXNet's. Any error names the symbol file and
// the MXNet node (mpc node names are MXNet's).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ImportOptions.h"
#include "frontend/mxnet/SymbolFile.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpc::frontend::mxnet {


struct ImportOptions {
  std::vector<InputSpec> inputs;
  /// loss "": the symbol's head; inference: heads as outputs
  TrainingOptions training;
  std::string modelName;  ///< default: the symbol file's name without "-symbol.json"
  std::string outputFile; ///< names the emitted model in messages
};

/// A tensor the model expects from a .params file.
struct ExpectedArray {
  std::string name;
  std::vector<int64_t> shape;
  bool aux = false;    ///< a running statistic ("aux:" in the file)
  bool unused = false; ///< in MXNet's list, not in mpc's model (a fixed gamma)
  std::string node;    ///< the MXNet node that consumes it
};

struct ImportResult {
  std::string modelJson; ///< the emitted model, as written
  std::vector<ExpectedArray> arrays;
  std::vector<std::string> notes; ///< printed as warnings by the driver
};

ImportResult importSymbol(const SymbolFile &symbol, const ImportOptions &options);

} // namespace mpc::frontend::mxnet
