//===- plan/CborWriter.h - streaming CBOR encoder ----------------===//
//
// Appends CBOR items (RFC 8949) to a byte vector as they are written, with
// no document tree in between: the plan writer streams a plan's structured
// part through it, which for a model of 200k nodes is several times faster
// than building and freeing an nlohmann::json tree and encoding that.
//
// The encoding is exactly the one nlohmann::json::to_cbor gives (the one
// plan.bin has always used, docs/plan-format.md): definite lengths only,
// every length and integer in its shortest form, negative integers as major
// type 1, reals as single precision when that is exact and double otherwise,
// NaN and infinities as half precision. Maps are written as a count and
// then key, value, key, value...: the caller writes the keys in sorted
// order, as nlohmann's std::map-backed objects do
// (test/unit/codegen/PlanFileTest.cpp re-encodes written plans with
// nlohmann and compares the bytes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <vector>

namespace mpc::plan {

class CborWriter {
public:
  explicit CborWriter(std::vector<uint8_t> &out) : out_(out) {}

  void writeUnsigned(uint64_t v) { head(0, v); }
  void writeInt(int64_t v) {
    if (v >= 0)
      head(0, uint64_t(v));
    else
      head(1, uint64_t(-1 - v)); // -1 - v cannot overflow for v < 0
  }
  void writeString(std::string_view s) {
    head(3, s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  /// Starts an array of `n` items; the caller writes them next.
  void beginArray(uint64_t n) { head(4, n); }
  /// Starts a map of `n` pairs; the caller writes key, value, ... next, the
  /// keys in sorted (byte) order.
  void beginMap(uint64_t n) { head(5, n); }
  /// A map key (a string): `w.key("shape").writeInts(shape)`.
  CborWriter &key(std::string_view k) {
    writeString(k);
    return *this;
  }
  void writeBool(bool b) { out_.push_back(b ? 0xf5 : 0xf4); }
  void writeNull() { out_.push_back(0xf6); }

  void writeDouble(double v) {
    if (std::isnan(v)) {
      bytes({0xf9, 0x7e, 0x00});
    } else if (std::isinf(v)) {
      bytes({0xf9, uint8_t(v > 0 ? 0x7c : 0xfc), 0x00});
    } else if (v >= double(std::numeric_limits<float>::lowest()) &&
               v <= double(std::numeric_limits<float>::max()) && double(float(v)) == v) {
      float f = float(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      out_.push_back(0xfa);
      bigEndian(bits, 4);
    } else {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      out_.push_back(0xfb);
      bigEndian(bits, 8);
    }
  }

  template <typename Int> void writeInts(const std::vector<Int> &v) {
    beginArray(v.size());
    for (Int x : v) {
      if constexpr (std::numeric_limits<Int>::is_signed)
        writeInt(int64_t(x));
      else
        writeUnsigned(uint64_t(x));
    }
  }

private:
  /// The initial byte of major type `major` with argument `v`, then `v`'s
  /// bytes, big-endian, in the shortest of the forms CBOR allows.
  void head(uint8_t major, uint64_t v) {
    uint8_t m = uint8_t(major << 5);
    if (v <= 0x17) {
      out_.push_back(uint8_t(m | v));
    } else if (v <= 0xff) {
      out_.push_back(m | 24);
      bigEndian(v, 1);
    } else if (v <= 0xffff) {
      out_.push_back(m | 25);
      bigEndian(v, 2);
    } else if (v <= 0xffffffffull) {
      out_.push_back(m | 26);
      bigEndian(v, 4);
    } else {
      out_.push_back(m | 27);
      bigEndian(v, 8);
    }
  }
  void bigEndian(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  void bytes(std::initializer_list<uint8_t> b) { out_.insert(out_.end(), b); }

  std::vector<uint8_t> &out_;
};

} // namespace mpc::plan
