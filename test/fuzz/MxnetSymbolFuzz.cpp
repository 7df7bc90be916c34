//===- test/fuzz/MxnetSymbolFuzz.cpp - fuzz target for MXNet symbols ------===//
//
// Any byte string given as an MXNet symbol file must end in a symbol or a
// UserError, and an accepted symbol, imported with its data variable given
// a shape, in an mpc model or a UserError: never a crash, a hang, a
// sanitizer report or an internal error (the import reports a shape on which
// MXNet's rules and mpc's disagree as one).
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/Import.h"
#include "frontend/mxnet/SymbolFile.h"
#include "support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace mx = mpc::frontend::mxnet;
  std::string text(reinterpret_cast<const char *>(data), size);
  mx::SymbolFile sym;
  try {
    sym = mx::parseSymbolFile(text, "fuzz-symbol.json");
  } catch (const mpc::UserError &) {
    return 0;
  }
  // The data variable: "data" (MXNet's name for it) where there is one, else
  // the first variable.
  std::string name;
  for (const mx::SymbolNode &n : sym.nodes)
    if (n.isVariable() && (name.empty() || n.name == "data")) name = n.name;
  if (name.empty()) return 0; // nothing to give --input; the import refuses that
  // Rows and images (the lit tests' and LeNet's shapes), trained from the
  // symbol's loss head or an added one, and for inference.
  struct Mode {
    const char *loss;
    bool inference;
  };
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {2, 1, 28, 28}};
  for (const std::vector<int64_t> &shape : shapes)
    for (Mode m : {Mode{"", false}, Mode{"mse", false}, Mode{"softmax_cross_entropy", false},
                   Mode{"", true}}) {
      mx::ImportOptions opt;
      opt.inputs = {{name, shape, false}};
      opt.training.loss = m.loss;
      opt.training.inference = m.inference;
      try {
        mx::importSymbol(sym, opt);
      } catch (const mpc::UserError &) {
      }
    }
  return 0;
}
