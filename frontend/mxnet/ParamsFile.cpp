//===- frontend/mxnet/ParamsFile.cpp - read MXNet NDArray lists ----------===//
//
// A bounds-checked cursor over the bytes: every read says what it reads, so
// a truncated or corrupt file is reported with the array and the offset,
// never read past its end. A size the file declares (the array count, a
// rank, the dimensions, a name's length) goes through the cursor's need
// before anything of that size is allocated, so a short file cannot make
// the reader allocate what it does not hold.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/ParamsFile.h"

#include "frontend/mxnet/AttrParse.h"
#include "support/Error.h"
#include "support/FileIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

namespace mpc::frontend::mxnet {

namespace {

constexpr uint64_t kListMagic = 0x112;
constexpr uint32_t kV1Magic = 0xF993fac8, kV2Magic = 0xF993fac9, kV3Magic = 0xF993faca;
/// More elements than this is a corrupt shape, whatever the file's size; it
/// also keeps an element count times its size (at most 8 bytes) in 64 bits.
constexpr uint64_t kMaxElements = uint64_t(1) << 40;
/// Every array starts with a 4-byte magic (or legacy rank): the least a
/// declared array count needs per array.
constexpr uint64_t kMinArrayBytes = 4;

float halfToFloat(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(float(frac), -24);
  else if (exp == 31) v = frac ? NAN : INFINITY;
  else v = std::ldexp(float(frac | 0x400), exp - 25);
  return sign ? -v : v;
}

class Cursor {
public:
  Cursor(const uint8_t *data, size_t size, const std::string &file)
      : data_(data), size_(size), file_(file) {}

  size_t offset() const { return pos_; }
  void setContext(const std::string &c) { context_ = c; }

  template <typename T> T read(const char *what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T)); // little-endian hosts only, as mpc
    pos_ += sizeof(T);
    return v;
  }
  const uint8_t *bytes(uint64_t n, const char *what) {
    need(n, what);
    const uint8_t *p = data_ + pos_;
    pos_ += size_t(n);
    return p;
  }
  /// Fails unless `n` more bytes are in the file.
  void need(uint64_t n, const std::string &what) const {
    if (n > left()) truncated(what + " needs " + std::to_string(n) + " bytes");
  }
  /// Fails unless `count` items of at least `each` bytes can be in the file;
  /// overflow-safe, for a count read from the file.
  void needEach(uint64_t count, uint64_t each, const std::string &what) const {
    if (count <= left() / each) return;
    uint64_t total = 0;
    // A product past 64 bits is shown as the largest 64-bit value, still a
    // lower bound.
    if (__builtin_mul_overflow(count, each, &total)) total = UINT64_MAX;
    truncated(what + " need at least " + std::to_string(total) + " bytes");
  }
  [[noreturn]] void fail(const std::string &msg, size_t at) const {
    throw UserError(file_,
                    context_.empty() ? "byte " + std::to_string(at)
                                     : context_ + " at byte " + std::to_string(at),
                    msg);
  }

private:
  uint64_t left() const { return size_ - pos_; }
  [[noreturn]] void truncated(const std::string &needs) const {
    fail("truncated file: " + needs + ", " + std::to_string(left()) + " left", pos_);
  }

  const uint8_t *data_;
  size_t size_, pos_ = 0;
  std::string file_, context_;
};

/// nullopt for an empty ("none") array: rank 0 before V3, rank -1 in V3
/// (where rank 0 is a scalar).
std::optional<std::vector<int64_t>> readShape(Cursor &c, bool legacy, uint32_t legacyNdim,
                                              bool v3) {
  size_t at = c.offset();
  int64_t ndim = legacy ? int64_t(legacyNdim) : int64_t(c.read<int32_t>("the shape's rank"));
  if (ndim < -1 || ndim > 32) c.fail("corrupt shape: rank " + std::to_string(ndim), at);
  if (ndim > 0)
    c.need(uint64_t(ndim) * (legacy ? 4 : 8), "a shape of rank " + std::to_string(ndim));
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < ndim; ++i) {
    int64_t d = legacy ? int64_t(c.read<uint32_t>("a dimension")) : c.read<int64_t>("a dimension");
    if (d < 0) c.fail("corrupt shape: dimension " + std::to_string(d), at);
    shape.push_back(d);
  }
  if (ndim < 0 || (ndim == 0 && !v3)) return std::nullopt;
  return shape;
}

NdArray readArray(Cursor &c) {
  NdArray a;
  a.offset = c.offset();
  uint32_t magic = c.read<uint32_t>("the array's magic");
  bool legacy = magic != kV1Magic && magic != kV2Magic && magic != kV3Magic;
  if (magic == kV2Magic || magic == kV3Magic) {
    size_t at = c.offset();
    int32_t stype = c.read<int32_t>("the storage type");
    if (stype != 0)
      c.fail("storage type " + std::to_string(stype) +
                 " is sparse (or unknown); only dense arrays (0) are supported",
             at);
  } else if (legacy && magic > 32) {
    c.fail("corrupt array: magic " + std::to_string(magic) +
               " is neither an NDArray magic (0xF993fac8/9/a) nor a legacy rank",
           a.offset);
  }
  std::optional<std::vector<int64_t>> shape = readShape(c, legacy, magic, magic == kV3Magic);
  if (!shape) c.fail("empty (none) array; a parameter must have data", a.offset);
  a.shape = *shape;
  // The element count, overflow-safe (0 with a zero dimension, whatever the
  // others); c.bytes checks its bytes against the bytes left once the dtype
  // gives the element size, before the data is allocated.
  uint64_t n = std::count(a.shape.begin(), a.shape.end(), 0) ? 0 : 1;
  for (int64_t d : a.shape) {
    if (n != 0 && uint64_t(d) > kMaxElements / n)
      c.fail("corrupt shape " + tupleText(a.shape) + ": too many elements", a.offset);
    n *= uint64_t(d);
  }
  c.read<int32_t>("the device type");
  c.read<int32_t>("the device id");
  size_t at = c.offset();
  a.typeFlag = c.read<int32_t>("the dtype");
  static const char *const kData[] = {"float32 data", "float64 data", "float16 data"};
  static const uint64_t kElementBytes[] = {4, 8, 2};
  if (a.typeFlag < 0 || a.typeFlag > 2)
    c.fail("dtype " + std::to_string(a.typeFlag) +
               " is not a float type (0 float32, 1 float64, 2 float16)",
           at);
  const uint8_t *p = c.bytes(n * kElementBytes[a.typeFlag], kData[a.typeFlag]);
  a.data.resize(size_t(n));
  switch (a.typeFlag) {
  case 0:
    // memcpy must not get a null pointer, which data() of an empty vector may be.
    if (n) std::memcpy(a.data.data(), p, size_t(n) * 4);
    break;
  case 1:
    for (uint64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, p + i * 8, 8);
      a.data[size_t(i)] = float(d);
    }
    break;
  default:
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + i * 2, 2);
      a.data[size_t(i)] = halfToFloat(h);
    }
  }
  return a;
}

} // namespace

std::vector<NdArray> parseParamsFile(const uint8_t *data, size_t size, const std::string &file) {
  Cursor c(data, size, file);
  uint64_t magic = c.read<uint64_t>("the file magic");
  if (magic != kListMagic)
    c.fail(
        "not an MXNet NDArray file: magic 0x" +
            [&] {
              char buf[20];
              std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(magic));
              return std::string(buf);
            }() +
            ", expected 0x112",
        0);
  c.read<uint64_t>("the reserved word");
  uint64_t count = c.read<uint64_t>("the array count");
  c.needEach(count, kMinArrayBytes, std::to_string(count) + " arrays");
  std::vector<NdArray> arrays;
  for (uint64_t i = 0; i < count; ++i) {
    c.setContext("array " + std::to_string(i));
    arrays.push_back(readArray(c));
  }
  c.setContext("");
  size_t at = c.offset();
  uint64_t names = c.read<uint64_t>("the name count");
  if (names != count)
    c.fail("the file has " + std::to_string(count) + " arrays but " + std::to_string(names) +
               " names; mpc needs a name per array",
           at);
  for (uint64_t i = 0; i < names; ++i) {
    c.setContext("name " + std::to_string(i));
    at = c.offset();
    uint64_t len = c.read<uint64_t>("the name's length");
    if (len == 0 || len > 4096) c.fail("corrupt name length " + std::to_string(len), at);
    const uint8_t *p = c.bytes(len, "the name");
    arrays[size_t(i)].name.assign(reinterpret_cast<const char *>(p), size_t(len));
  }
  if (c.offset() != size)
    throw UserError(file, "byte " + std::to_string(c.offset()),
                    std::to_string(size - c.offset()) + " unexpected bytes after the names");
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < arrays.size(); ++i)
    if (!seen.emplace(arrays[i].name, i).second)
      throw UserError(file, "array " + quoteName(arrays[i].name), "name appears twice");
  return arrays;
}

std::vector<NdArray> readParamsFile(const std::string &path) {
  std::vector<uint8_t> bytes = readFileBytes(path);
  return parseParamsFile(bytes.data(), bytes.size(), path);
}

std::vector<FloatTensor> matchParams(const std::vector<NdArray> &arrays,
                                     const std::vector<ExpectedArray> &expected,
                                     const std::string &file) {
  std::map<std::string, const ExpectedArray *> want;
  for (const ExpectedArray &e : expected) want[e.name] = &e;
  std::map<std::string, const NdArray *> found; // model name -> the array giving it
  std::vector<FloatTensor> out;
  for (const NdArray &a : arrays) {
    std::string name = a.name, prefix;
    if (size_t colon = name.find(':'); colon != std::string::npos) {
      prefix = name.substr(0, colon);
      name = name.substr(colon + 1);
    }
    std::string where = "array " + quoteName(a.name) + " at byte " + std::to_string(a.offset);
    if (!prefix.empty() && prefix != "arg" && prefix != "aux")
      throw UserError(file, where,
                      "unknown prefix " + quoteName(prefix + ":") + " (expected arg: or aux:)");
    auto it = want.find(name);
    if (it == want.end()) {
      std::string list;
      for (const auto &[n, e] : want) list += (list.empty() ? "" : ", ") + quoteName(n, "");
      throw UserError(file, where,
                      "not a parameter or running statistic of the model (expected: " + list + ")");
    }
    const ExpectedArray &e = *it->second;
    // "arg:w" and a bare "w" are distinct names in the file but one array of
    // the model.
    if (auto [f, fresh] = found.emplace(name, &a); !fresh)
      throw UserError(file, where,
                      quoteName(name) + " is also given by array " + quoteName(f->second->name));
    if (!prefix.empty() && (prefix == "aux") != e.aux)
      throw UserError(file, where,
                      quoteName(name) + " is " +
                          (e.aux ? "a running statistic of " + quoteName(e.node) + ": aux:"
                                 : "a parameter of " + quoteName(e.node) + ": arg:") +
                          " expected");
    if (a.shape != e.shape)
      throw UserError(file, where,
                      "shape mismatch: " + tupleText(a.shape) + " in the file, " +
                          tupleText(e.shape) + " in the model (" + quoteName(e.node) + ")");
    if (!e.unused) out.push_back({name, a.shape, a.data});
  }
  for (const ExpectedArray &e : expected)
    if (!found.count(e.name) && !e.unused)
      throw UserError(file, "",
                      "missing " + std::string(e.aux ? "running statistic" : "parameter") + " " +
                          quoteName(e.name) + " " + tupleText(e.shape) + " of " +
                          quoteName(e.node));
  std::sort(out.begin(), out.end(),
            [](const FloatTensor &a, const FloatTensor &b) { return a.name < b.name; });
  return out;
}

} // namespace mpc::frontend::mxnet
