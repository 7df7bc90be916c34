//===- tools/mpc/NumericFlags.h - validators for numeric flags ---------===//
//
// Every numeric flag of the driver takes plain decimal numbers: CLI11 alone
// would read "+3", "0x4" and "010" (as octal eight), wrap "-1" for an
// unsigned option to 18446744073709551615, and print the whole double range
// (309 digits) in its range messages. These validators accept exactly the
// numbers a flag allows, hand CLI11 the canonical decimal text, and echo the
// text the user typed when they refuse it, so a bad value is a user error
// (exit status 1) that names the flag and the value.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace mpc::tool {

/// An integer in [min, max] written in decimal digits, no sign ("INT").
/// These validators rewrite the text canonically ("010" -> "10", which
/// CLI11 would read as octal), so options take them with transform(), not
/// check() (whose validators cannot change the text).
CLI::Validator integerIn(uint64_t min, uint64_t max, std::string whyMax = "");
/// An integer in [1, 2^63 - 1] ("INT>0").
const CLI::Validator &positiveInteger();
/// An integer in [0, 2^64 - 1] ("UINT"): seeds.
const CLI::Validator &unsignedInteger();
/// A finite number > 0 in decimal, with an optional fraction and exponent:
/// 0.01, 1e-3 ("NUM>0"). No sign, hexadecimal, inf or nan.
const CLI::Validator &positiveNumber();
/// The same, >= 0 ("NUM>=0").
const CLI::Validator &nonNegativeNumber();

/// Parses a size: a plain decimal number and an optional unit, "123",
/// "64KiB", "16MiB", "2GiB", "1.5GB"; throws UserError naming `flag`.
int64_t parseByteSize(const std::string &text, const std::string &flag);

} // namespace mpc::tool
