//===- test/fuzz/MxnetParamsFuzz.cpp - fuzz target for MXNet .params -----===//
//
// Any byte string given to the .params reader must end in arrays or a
// UserError: never a crash, a hang, an allocation larger than the input
// warrants or a sanitizer report. An accepted array holds as many values as
// its shape says, and matching the arrays against a model that expects
// exactly them gives one tensor each or a UserError (an unknown prefix, one
// model array given twice), never a tensor name twice.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/ParamsFile.h"
#include "support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace mx = mpc::frontend::mxnet;
  std::vector<mx::NdArray> arrays;
  try {
    arrays = mx::parseParamsFile(data, size, "fuzz.params");
  } catch (const mpc::UserError &) {
    return 0;
  }
  std::vector<mx::ExpectedArray> expected;
  for (const mx::NdArray &a : arrays) {
    uint64_t n = 1;
    for (int64_t d : a.shape) n *= uint64_t(d);
    if (n != a.data.size()) {
      std::fprintf(stderr, "an array of %llu elements holds %zu values\n",
                   static_cast<unsigned long long>(n), a.data.size());
      std::abort();
    }
    // The name without its "arg:"/"aux:" prefix (npos + 1 is 0: no prefix).
    std::string name = a.name.substr(a.name.find(':') + 1);
    expected.push_back({name, a.shape, a.name.rfind("aux:", 0) == 0, false, "fuzz"});
  }
  try {
    if (mx::matchParams(arrays, expected, "fuzz.params").size() != arrays.size()) {
      std::fprintf(stderr, "matched arrays are not one tensor each\n");
      std::abort();
    }
  } catch (const mpc::UserError &) {
  }
  return 0;
}
