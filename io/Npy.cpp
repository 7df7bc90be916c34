//===- io/Npy.cpp - NumPy .npy files ----------------------------===//
//
// The header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (10000, 2), }
// parsed here by a small tokenizer that accepts exactly the literal forms
// numpy writes (quoted strings, True/False, tuples of integers) and rejects
// everything else with the offending text.
//
//===----------------------------------------------------------------------===//
#include "io/Npy.h"

#include "ops/Type.h"
#include "support/Error.h"
#include "support/FileIO.h"

#include <cstring>
#include <map>
#include <optional>

namespace mpc::io {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
using ops::kMaxElements;

struct HeaderValue {
  enum Kind { String, Bool, Tuple } kind = String;
  std::string str;
  bool b = false;
  std::vector<int64_t> ints;
};

class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &file) : s_(text), file_(file) {}

  std::map<std::string, HeaderValue> parse() {
    std::map<std::string, HeaderValue> out;
    expect('{');
    for (;;) {
      skipSpace();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key = parseString();
      expect(':');
      HeaderValue v = parseValue();
      if (!out.emplace(key, v).second) fail("duplicate key '" + key + "'");
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      break;
    }
    skipSpace();
    if (pos_ != s_.size()) fail("unexpected text after the header dict");
    return out;
  }

private:
  [[noreturn]] void fail(const std::string &msg) const {
    throw UserError(file_, "npy header", msg);
  }
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t'))
      ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    skipSpace();
    if (peek() != c) fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  std::string parseString() {
    skipSpace();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string at offset " + std::to_string(pos_));
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  HeaderValue parseValue() {
    skipSpace();
    HeaderValue v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = HeaderValue::String;
      v.str = parseString();
    } else if (s_.compare(pos_, 4, "True") == 0) {
      v.kind = HeaderValue::Bool, v.b = true, pos_ += 4;
    } else if (s_.compare(pos_, 5, "False") == 0) {
      v.kind = HeaderValue::Bool, v.b = false, pos_ += 5;
    } else if (c == '(') {
      v.kind = HeaderValue::Tuple;
      ++pos_;
      for (;;) {
        skipSpace();
        if (peek() == ')') {
          ++pos_;
          break;
        }
        if (peek() < '0' || peek() > '9') fail("bad shape tuple at offset " + std::to_string(pos_));
        int64_t n = 0;
        while (peek() >= '0' && peek() <= '9') {
          n = n * 10 + (peek() - '0');
          if (n > kMaxElements) fail("shape dimension too large");
          ++pos_;
        }
        // numpy may write a trailing 'L' on Python 2 longs.
        if (peek() == 'L') ++pos_;
        v.ints.push_back(n);
        skipSpace();
        if (peek() == ',') ++pos_;
        else if (peek() != ')') fail("bad shape tuple at offset " + std::to_string(pos_));
      }
    } else {
      fail("unsupported value at offset " + std::to_string(pos_));
    }
    return v;
  }

  const std::string &s_;
  const std::string &file_;
  size_t pos_ = 0;
};

uint32_t readLE(const uint8_t *p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

} // namespace

NpyArray parseNpy(const uint8_t *data, size_t size, const std::string &file) {
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0)
    throw UserError(file, "", "not an NPY file (bad magic)");
  int major = data[6];
  size_t lenBytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (!lenBytes)
    throw UserError(file, "", "unsupported NPY format version " + std::to_string(major) + "." +
                                  std::to_string(data[7]));
  size_t prefix = 8 + lenBytes;
  if (size < prefix) throw UserError(file, "", "truncated NPY header");
  size_t hlen = readLE(data + 8, int(lenBytes));
  if (hlen > size - prefix)
    throw UserError(file, "", "truncated NPY header: header length " + std::to_string(hlen) +
                                  " exceeds the file");
  std::string text(reinterpret_cast<const char *>(data + prefix), hlen);
  std::map<std::string, HeaderValue> dict = HeaderParser(text, file).parse();

  auto get = [&](const char *key, HeaderValue::Kind kind) -> const HeaderValue & {
    auto it = dict.find(key);
    if (it == dict.end()) throw UserError(file, "npy header", std::string("missing key '") + key + "'");
    if (it->second.kind != kind)
      throw UserError(file, "npy header", std::string("bad value for '") + key + "'");
    return it->second;
  };
  NpyArray arr;
  const std::string &descr = get("descr", HeaderValue::String).str;
  if (descr == "<f4") arr.dtype = plan::DType::F32;
  else if (descr == "<i4") arr.dtype = plan::DType::I32;
  else if (descr == "<f2") arr.dtype = plan::DType::F16;
  else
    throw UserError(file, "npy header",
                    "unsupported dtype '" + descr +
                        "' (expected '<f4' float32, '<i4' int32 or '<f2' float16; NumPy has no "
                        "bfloat16: give bf16 data as safetensors)");
  if (get("fortran_order", HeaderValue::Bool).b)
    throw UserError(file, "npy header", "fortran_order arrays are not supported (use C order)");
  arr.shape = get("shape", HeaderValue::Tuple).ints;
  if (dict.size() != 3) throw UserError(file, "npy header", "unexpected keys in the header");
  if (arr.shape.size() > ops::kMaxRank)
    throw UserError(file, "npy header",
                    "shape " + shapeText(arr.shape) + ": " + ops::rankLimitText(arr.shape.size()));
  int64_t n = 1;
  for (int64_t d : arr.shape) {
    if (d != 0 && n > kMaxElements / d)
      throw UserError(file, "npy header", "shape has too many elements");
    n *= d;
  }
  size_t body = size - prefix - hlen;
  uint64_t want = uint64_t(n) * uint64_t(ops::dtypeSize(arr.dtype));
  if (body != want)
    throw UserError(file, "npy data",
                    "data size " + std::to_string(body) + " bytes does not match shape (" +
                        std::to_string(want) + " bytes expected)");
  arr.data.assign(data + prefix + hlen, data + size);
  return arr;
}

NpyArray readNpy(const std::string &path) {
  std::vector<uint8_t> bytes = readFileBytes(path);
  return parseNpy(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> encodeNpy(plan::DType dtype, const std::vector<int64_t> &shape,
                               const void *data) {
  MPC_ASSERT(dtype != plan::DType::BF16, "NPY has no bfloat16");
  const char *descr = dtype == plan::DType::F32 ? "<f4" : dtype == plan::DType::F16 ? "<f2" : "<i4";
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': (";
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
    n *= shape[i];
  }
  dict += "), }";
  // Pad with spaces so that magic + version + length + header is a multiple
  // of 64, ending in a newline (what numpy writes).
  size_t total = 10 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::vector<uint8_t> out(kMagic, kMagic + 6);
  out.push_back(1);
  out.push_back(0);
  out.push_back(uint8_t(dict.size() & 0xff));
  out.push_back(uint8_t(dict.size() >> 8));
  out.insert(out.end(), dict.begin(), dict.end());
  const uint8_t *p = static_cast<const uint8_t *>(data);
  out.insert(out.end(), p, p + n * ops::dtypeSize(dtype));
  return out;
}

void writeNpy(const std::string &path, plan::DType dtype, const std::vector<int64_t> &shape,
              const void *data) {
  std::vector<uint8_t> bytes = encodeNpy(dtype, shape, data);
  writeFileAtomic(path, bytes.data(), bytes.size());
}

} // namespace mpc::io
