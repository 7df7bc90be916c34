//===- tools/mpc/NumericFlags.h - validators for integer flags ---------===//
//
// CLI11 converts "-1" for an unsigned option by wrapping it (to
// 18446744073709551615) and prints the whole double range in its own range
// messages; these validators accept exactly the decimal integers a flag
// allows and name the bad value, so every numeric flag of the driver
// rejects negative and out-of-range values with exit status 1.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <CLI/CLI.hpp>

namespace mpc::tool {

/// An integer in [1, 2^63 - 1] ("INT>0").
const CLI::Validator &positiveInteger();
/// An integer in [0, 2^64 - 1] ("UINT"): seeds.
const CLI::Validator &unsignedInteger();

} // namespace mpc::tool
