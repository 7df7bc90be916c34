//===- io/Safetensors.cpp - safetensors checkpoints -------------===//
//
// Reading follows the reference implementation's checks: the header length
// fits the file and a 100 MB cap, the header is a JSON object, every entry
// has a known dtype, a non-negative shape and data_offsets whose size matches
// the shape, and the sorted regions cover the data buffer with no gap and no
// overlap. Keys must be unique in every object (the JSON parser alone would
// keep the last of two equal keys).
//
//===----------------------------------------------------------------------===//
#include "io/Safetensors.h"

#include "ops/Type.h"
#include "support/Error.h"
#include "support/FileIO.h"

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

namespace mpc::io {

namespace {
constexpr uint64_t kMaxHeader = uint64_t(100) << 20;
using ops::kMaxElements;
} // namespace

namespace {

/// Finds the first key repeated inside one JSON object, at any depth: the
/// format forbids duplicates, and nlohmann's parser would keep the last one.
struct DuplicateKeyFinder {
  std::vector<std::set<std::string>> open; ///< keys seen in each open object
  std::string duplicate;
  bool found = false;

  bool operator()(int, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) open.emplace_back();
    else if (event == E::object_end && !open.empty()) open.pop_back();
    else if (event == E::key && !open.empty() && !found &&
             !open.back().insert(parsed.get<std::string>()).second) {
      found = true;
      duplicate = parsed.get<std::string>();
    }
    return true;
  }
};

} // namespace

SafetensorsFile parseSafetensorsFile(const uint8_t *data, size_t size, const std::string &file) {
  if (size < 8) throw UserError(file, "", "not a safetensors file (shorter than 8 bytes)");
  uint64_t hlen = 0;
  for (int i = 8; i-- > 0;) hlen = (hlen << 8) | data[i];
  if (hlen > kMaxHeader || hlen > size - 8)
    throw UserError(file, "header", "header length " + std::to_string(hlen) +
                                        " exceeds the file or the 100 MB limit");
  DuplicateKeyFinder dups;
  nlohmann::json header = nlohmann::json::parse(
      data + 8, data + 8 + hlen,
      [&dups](int depth, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
        return dups(depth, event, parsed);
      },
      /*allow_exceptions=*/false);
  if (header.is_discarded()) throw UserError(file, "header", "header is not valid JSON");
  if (!header.is_object()) throw UserError(file, "header", "header is not a JSON object");
  if (dups.found)
    throw UserError(file, "header", "duplicate key '" + dups.duplicate +
                                        "' (the format requires unique names)");
  SafetensorsFile result;
  const uint8_t *body = data + 8 + hlen;
  uint64_t bodySize = size - 8 - hlen;

  std::vector<NamedTensor> out;
  std::vector<std::pair<uint64_t, uint64_t>> regions;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    if (name == "__metadata__") {
      if (!it.value().is_object())
        throw UserError(file, "__metadata__", "metadata must be an object of strings");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          throw UserError(file, "__metadata__", "metadata value '" + m.key() + "' is not a string");
        result.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const nlohmann::json &e = it.value();
    std::string where = "tensor '" + name + "'";
    if (!e.is_object()) throw UserError(file, where, "entry is not an object");
    if (!e.contains("dtype") || !e["dtype"].is_string())
      throw UserError(file, where, "missing or non-string 'dtype'");
    NamedTensor t;
    t.name = name;
    std::string dtype = e["dtype"].get<std::string>();
    if (dtype == "F32") t.dtype = plan::DType::F32;
    else if (dtype == "I32") t.dtype = plan::DType::I32;
    else if (dtype == "BF16") t.dtype = plan::DType::BF16;
    else if (dtype == "F16") t.dtype = plan::DType::F16;
    else
      throw UserError(file, where,
                      "unsupported dtype '" + dtype + "' (expected F32, I32, BF16 or F16)");
    if (!e.contains("shape") || !e["shape"].is_array())
      throw UserError(file, where, "missing or non-array 'shape'");
    if (e["shape"].size() > ops::kMaxRank)
      throw UserError(file, where, "shape: " + ops::rankLimitText(e["shape"].size()));
    int64_t n = 1;
    for (const nlohmann::json &d : e["shape"]) {
      if (!d.is_number_unsigned())
        throw UserError(file, where, "shape entries must be non-negative integers");
      uint64_t v = d.get<uint64_t>();
      if (v > uint64_t(kMaxElements) || (v != 0 && n > kMaxElements / int64_t(v)))
        throw UserError(file, where, "shape has too many elements");
      t.shape.push_back(int64_t(v));
      n *= int64_t(v);
    }
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2 || !e["data_offsets"][0].is_number_unsigned() ||
        !e["data_offsets"][1].is_number_unsigned())
      throw UserError(file, where, "'data_offsets' must be two non-negative integers");
    uint64_t begin = e["data_offsets"][0].get<uint64_t>();
    uint64_t end = e["data_offsets"][1].get<uint64_t>();
    if (begin > end || end > bodySize)
      throw UserError(file, where, "data_offsets [" + std::to_string(begin) + ", " +
                                       std::to_string(end) + "] outside the data of " +
                                       std::to_string(bodySize) + " bytes");
    const uint64_t want = uint64_t(n) * uint64_t(ops::dtypeSize(t.dtype));
    if (end - begin != want)
      throw UserError(file, where, "data size " + std::to_string(end - begin) +
                                       " bytes does not match shape (" +
                                       std::to_string(want) + " bytes expected)");
    t.data.assign(body + begin, body + end);
    regions.emplace_back(begin, end);
    out.push_back(std::move(t));
  }
  std::sort(regions.begin(), regions.end());
  uint64_t cursor = 0;
  for (const auto &[b, e] : regions) {
    if (b != cursor)
      throw UserError(file, "data", b < cursor ? "tensor data regions overlap"
                                               : "gap in the tensor data at byte " +
                                                     std::to_string(cursor));
    cursor = e;
  }
  if (cursor != bodySize)
    throw UserError(file, "data", "trailing bytes after the tensor data");
  std::sort(out.begin(), out.end(),
            [](const NamedTensor &a, const NamedTensor &b) { return a.name < b.name; });
  result.tensors = std::move(out);
  return result;
}

std::vector<NamedTensor> parseSafetensors(const uint8_t *data, size_t size,
                                          const std::string &file) {
  return parseSafetensorsFile(data, size, file).tensors;
}

SafetensorsFile readSafetensorsFile(const std::string &path) {
  std::vector<uint8_t> bytes = readFileBytes(path);
  return parseSafetensorsFile(bytes.data(), bytes.size(), path);
}

std::vector<NamedTensor> readSafetensors(const std::string &path) {
  return readSafetensorsFile(path).tensors;
}

std::vector<uint8_t> encodeSafetensors(const std::vector<NamedTensor> &tensors,
                                       const std::map<std::string, std::string> &metadata) {
  std::vector<const NamedTensor *> sorted;
  for (const NamedTensor &t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const NamedTensor *a, const NamedTensor *b) { return a->name < b->name; });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor *t : sorted) {
    MPC_ASSERT(t->name != "__metadata__" && !header.contains(t->name),
               "bad or duplicate tensor name '" + t->name + "'");
    const char *dtype = t->dtype == plan::DType::F32    ? "F32"
                        : t->dtype == plan::DType::I32  ? "I32"
                        : t->dtype == plan::DType::BF16 ? "BF16"
                                                        : "F16";
    header[t->name] = {{"dtype", dtype},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->data.size()}}};
    offset += t->data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> out(8);
  uint64_t hlen = text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(hlen >> (8 * i));
  out.insert(out.end(), text.begin(), text.end());
  for (const NamedTensor *t : sorted) out.insert(out.end(), t->data.begin(), t->data.end());
  return out;
}

void writeSafetensors(const std::string &path, const std::vector<NamedTensor> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  std::vector<uint8_t> bytes = encodeSafetensors(tensors, metadata);
  writeFileAtomic(path, bytes.data(), bytes.size());
}

} // namespace mpc::io
