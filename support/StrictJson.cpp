//===- support/StrictJson.cpp - JSON files parsed as untrusted input ----===//
#include "support/StrictJson.h"

#include "support/Error.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace mpc {

namespace {

/// Builds the parsed document from nlohmann's SAX events, tracking the path
/// to reject duplicate object keys (nlohmann silently keeps one of them) and
/// overly deep nesting, with a JSON pointer.
///
/// nlohmann's own DOM builder inserts each key through ordered_map's
/// operator[], which searches the object's keys one by one: quadratic in the
/// size of an object, and "params" has one key per parameter. Here the key
/// is checked against a hash set first, so it is known to be new and is
/// appended to the object's key list directly; order and contents are what
/// nlohmann's builder gives.
class DomBuilder {
public:
  explicit DomBuilder(std::string file) : file_(std::move(file)) {}

  OrderedJson take() { return std::move(root_); }

  // The SAX interface nlohmann's parser calls (nlohmann::json_sax, bound
  // statically: the parser is a template on the handler's type).
  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(OrderedJson::number_integer_t v) { return value(v); }
  bool number_unsigned(OrderedJson::number_unsigned_t v) { return value(v); }
  bool number_float(OrderedJson::number_float_t v, const OrderedJson::string_t &) {
    return value(v);
  }
  bool string(OrderedJson::string_t &v) { return value(std::move(v)); }
  bool binary(OrderedJson::binary_t &v) { return value(std::move(v)); }

  bool start_object(std::size_t) { return open(OrderedJson::value_t::object, false); }
  bool start_array(std::size_t) { return open(OrderedJson::value_t::array, true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(OrderedJson::string_t &k) {
    Frame &f = frames_.back();
    f.key = k;
    // ordered_map is a vector of (key, value) pairs.
    auto &entries = *f.value->get_ptr<OrderedJson::object_t *>();
    if (seenBefore(f, entries, k))
      throw UserError(file_, pointer(), "duplicate key " + quoteName(k));
    slot_ = &entries.emplace_back(std::move(k), nullptr).second;
    return true;
  }

  /// Rethrows what nlohmann reports (parse_error, or out_of_range for a
  /// number that overflows) with its own type, as nlohmann's parse would.
  template <class Exception>
  bool parse_error(std::size_t, const std::string &, const Exception &e) {
    throw e;
  }

private:
  struct Frame {
    OrderedJson *value;
    bool isArray;
    /// An object's keys, once it has kLinearKeys of them.
    std::unordered_set<std::string> keys;
    std::string key;
    size_t next;
  };

  /// Most objects of a model are small (a node has a handful of keys), and
  /// a look through their few keys costs less than a hash set's allocations;
  /// a large object ("params", one key per parameter) gets the set once it
  /// reaches this size, so the check stays linear.
  static constexpr size_t kLinearKeys = 16;

  /// Whether the object being read already has the key `k`.
  static bool seenBefore(Frame &f, const OrderedJson::object_t &entries, const std::string &k) {
    if (entries.size() < kLinearKeys)
      return std::any_of(entries.begin(), entries.end(),
                         [&](const auto &e) { return e.first == k; });
    if (f.keys.empty())
      for (const auto &e : entries) f.keys.insert(e.first);
    return !f.keys.insert(k).second;
  }

  /// Where a new value goes: the root, the end of the innermost array, or
  /// the slot of the key just read. Returns the stored value.
  OrderedJson *place(OrderedJson &&v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame &f = frames_.back();
    if (f.isArray) {
      // A value starts inside an array: advance the index in the pointer.
      f.key = std::to_string(f.next++);
      auto &items = *f.value->get_ptr<OrderedJson::array_t *>();
      return &items.emplace_back(std::move(v));
    }
    *slot_ = std::move(v);
    return slot_;
  }

  bool value(OrderedJson &&v) {
    place(std::move(v));
    return true;
  }

  bool open(OrderedJson::value_t type, bool isArray) {
    // The depth is the number of containers already open, as nlohmann's
    // parser callback counts it.
    if (!frames_.empty() && frames_.back().isArray) {
      Frame &f = frames_.back();
      f.key = std::to_string(f.next);
    }
    if (frames_.size() > size_t(kMaxJsonDepth))
      throw UserError(file_, pointer(),
                      "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    // Elements of an enclosing container are not added while this one is
    // open, so the pointer to it stays valid until close().
    OrderedJson *v = place(OrderedJson(type));
    frames_.push_back({v, isArray, {}, {}, 0});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string pointer() const {
    std::string p;
    for (const Frame &f : frames_) p += "/" + ptrToken(f.key);
    return p;
  }

  std::string file_;
  OrderedJson root_;
  std::vector<Frame> frames_;
  OrderedJson *slot_ = nullptr;
};

/// nlohmann's message without its "[json.exception...] parse error at line
/// L, column C: " prefix (the location is reported separately).
std::string parserDetail(const std::string &what) {
  std::string s = what;
  if (size_t b = s.find("] "); b != std::string::npos && s.rfind("[json.exception", 0) == 0)
    s = s.substr(b + 2);
  if (s.rfind("parse error", 0) == 0) {
    if (size_t c = s.find(": "); c != std::string::npos) s = s.substr(c + 2);
  }
  return s;
}

} // namespace

/// Line and column (1-based) of the byte at 1-based offset `byte`.
std::string lineCol(const std::string &text, size_t byte) {
  size_t index = byte == 0 ? 0 : std::min(byte - 1, text.size());
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < index; ++i)
    if (text[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  return std::to_string(line) + ":" + std::to_string(index - lineStart + 1);
}

/// Escapes one reference token of a JSON pointer (RFC 6901).
std::string ptrToken(const std::string &key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

OrderedJson parseStrictJson(const std::string &text, const std::string &file) {
  // nlohmann's lexer takes a NUL byte for the end of the input, which would
  // silently ignore whatever follows it.
  if (size_t nul = text.find('\0'); nul != std::string::npos)
    throw UserError(file, lineCol(text, nul + 1), "syntax error: NUL byte in the file");
  DomBuilder builder(file);
  try {
    OrderedJson::sax_parse(text, &builder, OrderedJson::input_format_t::json,
                           /*strict=*/true, /*ignore_comments=*/false);
    return builder.take();
  } catch (const OrderedJson::parse_error &e) {
    std::string detail = parserDetail(e.what());
    if (detail.rfind("syntax error", 0) != 0) detail = "syntax error: " + detail;
    throw UserError(file, lineCol(text, e.byte), detail);
  } catch (const OrderedJson::exception &e) {
    // Number overflow ("1e400") carries no position; find the token.
    std::string detail = parserDetail(e.what());
    const std::string prefix = "number overflow parsing '";
    if (detail.rfind(prefix, 0) == 0 && detail.size() > prefix.size() + 1) {
      std::string token = detail.substr(prefix.size(), detail.size() - prefix.size() - 1);
      size_t at = text.find(token);
      throw UserError(file, at == std::string::npos ? "" : lineCol(text, at + 1),
                      "number " + token + " is out of range");
    }
    throw UserError(file, "", "invalid JSON: " + detail);
  }
}

} // namespace mpc
