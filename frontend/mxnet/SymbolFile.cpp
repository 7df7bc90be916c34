//===- frontend/mxnet/SymbolFile.cpp - parse and normalise symbol JSON ----===//
//
// The three eras differ only in where a node keeps its strings (nnvm's
// JSONNode::Load merges "attrs", "attr" and "param" into one dictionary the
// same way), so reading is: merge, then lift the annotations out. MXNet
// itself renames "ctx_group" to "__ctx_group__" when it upgrades a file
// (legacy_json_util.cc); both spellings mean the same here.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/SymbolFile.h"

#include "support/Error.h"
#include "support/FileIO.h"
#include "support/StrictJson.h"

#include <algorithm>
#include <functional>

namespace mpc::frontend::mxnet {

using json = OrderedJson; // what parseStrictJson returns

std::string SymbolNode::describe() const {
  return quoteName(name) + " (" + (isVariable() ? std::string("variable") : quoteName(op, "")) +
         ")";
}

namespace {

std::string typeName(const json &j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  return "null";
}

/// A JSON value echoed in a message: on one line, cut when long.
std::string shown(const json &j) { return quoteName(j.dump(), ""); }

class Reader {
public:
  Reader(const std::string &text, const std::string &file) : text_(text), file_(file) {}

  SymbolFile read() {
    // Strict, as the model reader: a duplicate key or absurd nesting is an
    // error, not a value silently dropped or a stack overflow.
    json root = parseStrictJson(text_, file_);
    if (!root.is_object())
      fail("",
           "a symbol file is a JSON object with \"nodes\" and \"heads\", got " + typeName(root));
    for (auto it = root.begin(); it != root.end(); ++it)
      if (it.key() != "nodes" && it.key() != "heads" && it.key() != "arg_nodes" &&
          it.key() != "node_row_ptr" && it.key() != "attrs")
        fail("/" + ptrToken(it.key()),
             "unknown top-level key " + quoteName(it.key()) +
                 " (allowed: nodes, arg_nodes, node_row_ptr, heads, attrs)");
    out_.file = file_;
    const json *nodes = find(root, "nodes");
    if (!nodes || !nodes->is_array() || nodes->empty())
      fail("/nodes", "\"nodes\" must be a non-empty array of nodes");
    readVersion(root);
    bool sawParam = false, sawAttr = false;
    for (size_t i = 0; i < nodes->size(); ++i)
      out_.nodes.push_back(readNode((*nodes)[i], "/nodes/" + std::to_string(i), sawParam, sawAttr));
    out_.era = sawParam ? "0.8" : sawAttr ? "0.9" : "1.x";
    for (size_t i = 0; i < out_.nodes.size(); ++i)
      for (size_t k = 0; k < out_.nodes[i].inputs.size(); ++k)
        checkEntry(out_.nodes[i].inputs[k], out_.nodes[i].pointer + "/inputs/" + std::to_string(k),
                   "input of " + out_.nodes[i].describe());
    const json *heads = find(root, "heads");
    if (!heads || !heads->is_array() || heads->empty())
      fail("/heads", "\"heads\" must be a non-empty array of [node, index(, version)] entries");
    for (size_t i = 0; i < heads->size(); ++i) {
      std::string ptr = "/heads/" + std::to_string(i);
      Entry e = readEntry((*heads)[i], ptr);
      checkEntry(e, ptr, "head");
      out_.heads.push_back(e);
    }
    if (const json *args = find(root, "arg_nodes")) checkIndexList(*args, "/arg_nodes", true);
    if (const json *rows = find(root, "node_row_ptr"))
      checkIndexList(*rows, "/node_row_ptr", false);
    sortTopologically();
    return std::move(out_);
  }

private:
  [[noreturn]] void fail(const std::string &where, const std::string &msg) const {
    throw UserError(file_, where, msg);
  }

  static const json *find(const json &obj, const std::string &key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  void readVersion(const json &root) {
    const json *attrs = find(root, "attrs");
    if (!attrs) return;
    if (!attrs->is_object()) fail("/attrs", "\"attrs\" must be an object, got " + typeName(*attrs));
    const json *v = find(*attrs, "mxnet_version");
    if (!v) return;
    // Written as ["int", 10500] by nnvm's any-typed graph attributes.
    if (v->is_array() && v->size() == 2 && (*v)[1].is_number_integer())
      out_.mxnetVersion = (*v)[1].get<int>();
    else if (v->is_number_integer()) out_.mxnetVersion = v->get<int>();
    else fail("/attrs/mxnet_version", "mxnet_version must be [\"int\", N], got " + shown(*v));
  }

  Entry readEntry(const json &j, const std::string &ptr) const {
    if (!j.is_array() || j.size() < 2 || j.size() > 3)
      fail(ptr, "an entry is [node, index] or [node, index, version], got " + shown(j));
    for (const json &f : j)
      if (!f.is_number_integer())
        fail(ptr,
             "an entry is [node, index] or [node, index, version] of integers, got " + shown(j));
    int64_t node = j[0].get<int64_t>(), index = j[1].get<int64_t>();
    if (node < 0 || node > 1 << 30 || index < 0 || index > 1 << 20)
      fail(ptr, "entry " + shown(j) + " out of range");
    return Entry{int(node), int(index)};
  }

  void checkEntry(const Entry &e, const std::string &ptr, const std::string &what) const {
    if (size_t(e.node) >= out_.nodes.size())
      fail(ptr, "dangling " + what + ": node " + std::to_string(e.node) + " does not exist (" +
                    std::to_string(out_.nodes.size()) + " nodes)");
  }

  void checkIndexList(const json &j, const std::string &ptr, bool nodeIds) const {
    if (!j.is_array()) fail(ptr, ptr.substr(1) + " must be an array of integers");
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_number_integer() || j[i].get<int64_t>() < 0)
        fail(ptr + "/" + std::to_string(i), ptr.substr(1) + " must hold integers >= 0");
      if (nodeIds && size_t(j[i].get<int64_t>()) >= out_.nodes.size())
        fail(ptr + "/" + std::to_string(i), "arg_nodes names node " +
                                                std::to_string(j[i].get<int64_t>()) +
                                                ", which does not exist");
    }
  }

  SymbolNode readNode(const json &j, const std::string &ptr, bool &sawParam, bool &sawAttr) {
    SymbolNode n;
    n.pointer = ptr;
    if (!j.is_object()) fail(ptr, "a node must be an object, got " + typeName(j));
    const json *op = find(j, "op"), *name = find(j, "name");
    if (!op || !op->is_string()) fail(ptr + "/op", "a node needs \"op\", a string");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      fail(ptr + "/name", "a node needs \"name\", a non-empty string");
    n.op = op->get<std::string>();
    n.name = name->get<std::string>();
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string &k = it.key();
      if (k == "op" || k == "name" || k == "inputs" || k == "control_deps" ||
          k == "backward_source_id")
        continue;
      if (k == "attrs" || k == "attr" || k == "param") {
        sawParam |= k == "param";
        sawAttr |= k == "attr";
        mergeAttrs(n, *it, ptr + "/" + k);
        continue;
      }
      if (k == "subgraphs" && it->is_array() && it->empty()) continue;
      fail(ptr + "/" + ptrToken(k), "unknown key " + quoteName(k) + " in node " + n.describe() +
                                        " (allowed: op, name, inputs, attrs, attr, param, "
                                        "control_deps, backward_source_id)");
    }
    sawParam |= find(j, "backward_source_id") != nullptr;
    const json *inputs = find(j, "inputs");
    if (inputs) {
      if (!inputs->is_array())
        fail(ptr + "/inputs", "\"inputs\" of " + n.describe() + " must be an array");
      for (size_t i = 0; i < inputs->size(); ++i)
        n.inputs.push_back(readEntry((*inputs)[i], ptr + "/inputs/" + std::to_string(i)));
    }
    if (n.isVariable() && !n.inputs.empty())
      fail(ptr + "/inputs", "variable " + n.describe() + " must not have inputs");
    return n;
  }

  /// Moves one dictionary into the node, lifting the annotations.
  void mergeAttrs(SymbolNode &n, const json &d, const std::string &ptr) {
    if (!d.is_object())
      fail(ptr, "attributes of " + n.describe() + " must be an object of strings");
    for (auto it = d.begin(); it != d.end(); ++it) {
      if (!it->is_string())
        fail(ptr + "/" + ptrToken(it.key()), "attribute " + quoteName(it.key()) + " of " +
                                                 n.describe() + " must be a string, got " +
                                                 shown(*it));
      std::string key = it.key(), value = it->get<std::string>();
      std::string bare = key;
      if (bare.size() > 4 && bare.rfind("__", 0) == 0 &&
          bare.compare(bare.size() - 2, 2, "__") == 0)
        bare = bare.substr(2, bare.size() - 4);
      std::optional<std::string> *slot = nullptr;
      if (bare == "ctx_group") slot = &n.ctxGroup;
      else if (bare == "lr_mult") slot = &n.lrMult;
      else if (bare == "wd_mult") slot = &n.wdMult;
      else if (key == "__shape__") slot = &n.shape;
      else if (key == "__dtype__") slot = &n.dtype;
      else if (key == "__init__") slot = &n.init;
      if (slot) *slot = value;
      else n.attrs[key] = value;
    }
  }

  /// Depth-first, operands first; a node met again while on the stack is a
  /// cycle, reported with the path.
  void sortTopologically() {
    size_t n = out_.nodes.size();
    std::vector<int> state(n, 0); // 0 new, 1 on stack, 2 done
    std::vector<int> stack;
    std::function<void(int)> visit = [&](int v) {
      state[v] = 1;
      stack.push_back(v);
      for (const Entry &e : out_.nodes[v].inputs) {
        if (state[e.node] == 1) {
          std::string path;
          auto from = std::find(stack.begin(), stack.end(), e.node);
          for (auto it = from; it != stack.end(); ++it)
            path += quoteName(out_.nodes[*it].name) + " uses " +
                    quoteName(out_.nodes[it + 1 == stack.end() ? e.node : *(it + 1)].name) +
                    (it + 1 == stack.end() ? "" : ", ");
          fail(out_.nodes[e.node].pointer,
               "cycle through " + out_.nodes[e.node].describe() + ": " + path);
        }
        if (state[e.node] == 0) visit(e.node);
      }
      stack.pop_back();
      state[v] = 2;
      out_.order.push_back(v);
    };
    for (size_t v = 0; v < n; ++v)
      if (state[v] == 0) visit(int(v));
  }

  const std::string &text_;
  std::string file_;
  SymbolFile out_;
};

} // namespace

SymbolFile parseSymbolFile(const std::string &text, const std::string &file) {
  return Reader(text, file).read();
}

SymbolFile readSymbolFile(const std::string &path) {
  return parseSymbolFile(readFileText(path), path);
}

} // namespace mpc::frontend::mxnet
