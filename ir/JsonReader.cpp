//===- ir/JsonReader.cpp - model.json -> Graph --------------------------===//
//
// The reader treats the model file as untrusted: every JSON value is checked
// for its type before it is read, nothing on the file's contents is asserted,
// and every problem becomes a UserError naming the file, the JSON pointer of
// the offending element and the node (format in docs/ir.md).
//
// Steps:
//   1. parse strictly (support/StrictJson.h: object order kept, duplicate
//      keys and absurd nesting rejected);
//   2. check the top-level keys and the format version;
//   3. create the leaves in file order: inputs, params, state;
//   4. create the op nodes in array order, checking op, arity, attributes and
//      device; operands may name nodes defined later in the array;
//   5. resolve operands, sort topologically (a cycle is an error naming a
//      node on it), and run each op's shape rule in that order;
//   6. read loss, outputs, optimizer, stages and gradients.
//
//===----------------------------------------------------------------------===//
#include "ir/JsonReader.h"

#include "ir/Builder.h"
#include "ir/Device.h"
#include "ir/JsonWriter.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "support/StrictJson.h"
#include "support/StringUtil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <set>

namespace mpc::ir {

namespace {

using json = OrderedJson; // what parseStrictJson returns

const std::vector<std::string> kTopKeys = {"mpc",     "name",      "inputs", "params",
                                           "state",   "nodes",     "loss",   "outputs",
                                           "optimizer", "stages",  "gradients",
                                           "pipeline",  "data_parallel", "groups", "precision"};
const std::vector<std::string> kInputKeys = {"shape", "dtype", "device", "shard", "spmd"};
const std::vector<std::string> kParamKeys = {"shape",   "dtype",   "init",  "mirror_of", "device",
                                             "lr_mult", "wd_mult", "shard", "shard_of",  "spmd"};
const std::vector<std::string> kStateKeys = {"shape",     "dtype",    "init", "param", "device",
                                             "mirror_of", "shard_of", "spmd"};
const std::vector<std::string> kShardOfKeys = {"tensor", "index", "count", "shape", "axis"};
const std::vector<std::string> kSpmdKeys = {"of", "index", "size", "layout"};
const std::vector<std::string> kNodeKeys = {"name",   "op",       "inputs", "attrs",
                                            "device", "backward", "origin", "spmd"};
const std::vector<std::string> kSgdKeys = {"lr", "momentum", "dampening", "nesterov",
                                           "weight_decay"};
const std::vector<std::string> kPipelineKeys = {"microbatches", "schedule", "in_flight"};
const std::vector<std::string> kAdamKeys = {"lr", "beta1", "beta2", "eps", "weight_decay"};

std::string child(const std::string &ptr, const std::string &key) {
  return ptr + "/" + ptrToken(key);
}
std::string child(const std::string &ptr, size_t index) {
  return ptr + "/" + std::to_string(index);
}

/// A short description of a JSON value for messages: the value itself for
/// scalars (shortened), "an object" / "an array" for containers. Never
/// recurses into containers.
std::string describeJson(const json &j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_null()) return "null";
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// "; did you mean 'x'?" when a candidate is close to `word`, else "".
std::string suggestion(const std::string &word, const std::vector<std::string> &candidates) {
  std::string hint = didYouMean(word, candidates);
  return hint.empty() ? hint : "; " + hint;
}

/// Names: non-empty printable ASCII without spaces or the characters the
/// text form uses as punctuation.
bool isValidName(const std::string &s) {
  if (s.empty() || s.size() > 256) return false;
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
    if (std::string_view("\"'%@,(){}").find(c) != std::string_view::npos) return false;
  }
  return true;
}


struct PendingNode {
  const json *obj = nullptr;
  std::string ptr;
  Node *node = nullptr;
  const OpInfo *info = nullptr;
  std::vector<std::string> operandNames;
  std::vector<int> operandNodes; ///< index into pending, or -1 for a leaf
  AttrMap attrs;
};

class ModelReader {
public:
  ModelReader(const std::string &text, const std::string &file) : text_(text), file_(file) {}

  std::unique_ptr<Graph> read() {
    json root = parse();
    if (!root.is_object())
      fail("", "top level must be a JSON object, got " + describeJson(root));
    g_ = std::make_unique<Graph>();
    g_->sourceFile = file_;
    // The version first: a file of another version may well have other keys.
    readVersion(root);
    checkKeys(root, "", kTopKeys, "top-level key");
    g_->name = "model";
    if (const json *n = find(root, "name")) g_->name = nameOf(*n, "/name", "model name");
    if (const json *j = find(root, "inputs")) readInputs(*j);
    if (const json *j = find(root, "params")) readParams(*j);
    if (const json *j = find(root, "state")) readStates(*j);
    if (const json *j = find(root, "nodes")) readNodes(*j);
    resolveOperands();
    inferTypes(topoOrder());
    if (const json *j = find(root, "loss")) readLoss(*j);
    if (const json *j = find(root, "outputs")) readOutputs(*j);
    if (const json *j = find(root, "optimizer")) readOptimizer(*j);
    if (const json *j = find(root, "pipeline")) readPipeline(*j);
    if (const json *j = find(root, "groups")) readGroups(*j);
    if (const json *j = find(root, "data_parallel")) {
      if (!j->is_number_integer() || j->get<int64_t>() < 1 || j->get<int64_t>() > kMaxReplicas)
        fail("/data_parallel", "data_parallel must be an integer in [1, " +
                                   std::to_string(kMaxReplicas) + "] (the replicas of the " +
                                   "model), got " + describeJson(*j));
      g_->dataParallel.replicas = j->get<int64_t>();
    }
    if (const json *j = find(root, "precision")) {
      if (!j->is_string() || !ops::isPrecision(j->get<std::string>()))
        fail("/precision", std::string("precision must be ") + ops::precisionList() + ", got " +
                               describeJson(*j));
      g_->precision = j->get<std::string>();
    }
    g_->stages = kShaped;
    if (const json *j = find(root, "stages")) readStages(*j);
    if (const json *j = find(root, "gradients")) readGradients(*j);
    return std::move(g_);
  }

private:
  [[noreturn]] void fail(const std::string &where, const std::string &message) const {
    throw UserError(file_, where, message);
  }

  json parse() { return parseStrictJson(text_, file_); }

  static const json *find(const json &obj, const std::string &key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  void checkKeys(const json &obj, const std::string &ptr, const std::vector<std::string> &allowed,
                 const std::string &what, const std::string &owner = "") const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
      fail(child(ptr, it.key()), "unknown " + what + " " + quoteName(it.key()) +
                                     (owner.empty() ? "" : " in " + owner) +
                                     suggestion(it.key(), allowed) +
                                     " (allowed: " + joinText(allowed) + ")");
    }
  }

  const json &expectObject(const json &j, const std::string &ptr, const std::string &what) const {
    if (!j.is_object()) fail(ptr, what + " must be an object, got " + describeJson(j));
    return j;
  }

  std::string expectString(const json &j, const std::string &ptr, const std::string &what) const {
    if (!j.is_string()) fail(ptr, what + " must be a string, got " + describeJson(j));
    return j.get<std::string>();
  }

  double expectNumber(const json &j, const std::string &ptr, const std::string &what) const {
    if (!j.is_number()) fail(ptr, what + " must be a number, got " + describeJson(j));
    return j.get<double>();
  }

  /// Reads an integer that fits int64; `what` names it in messages.
  int64_t expectInt(const json &j, const std::string &ptr, const std::string &what) const {
    if (!j.is_number_integer()) fail(ptr, what + " must be an integer, got " + describeJson(j));
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(ptr, what + " " + describeJson(j) + " is out of range");
    return j.get<int64_t>();
  }

  std::string nameOf(const json &j, const std::string &ptr, const std::string &what) const {
    std::string s = expectString(j, ptr, what);
    if (!isValidName(s))
      fail(ptr, "invalid " + what + " " + quoteName(s) +
                    ": names are 1 to 256 printable characters without spaces or any of "
                    "\" ' % @ , ( ) { }");
    return s;
  }

  void readVersion(const json &root) {
    const json *v = find(root, "mpc");
    if (!v) fail("", "missing format version \"mpc\"; supported versions: 1");
    bool one = v->is_number_integer() &&
               (v->is_number_unsigned() ? v->get<uint64_t>() == 1 : v->get<int64_t>() == 1);
    if (!one)
      fail("/mpc", "unsupported format version " + describeJson(*v) + "; supported versions: 1");
  }

  /// Checks that `name` is not yet defined and records where it is defined.
  void defineName(const std::string &name, const std::string &ptr, const std::string &at) {
    auto [it, inserted] = definedAt_.emplace(name, ptr);
    if (!inserted)
      fail(at, "duplicate name " + quoteName(name) + " (already defined at " + it->second + ")");
  }

  Shape readShape(const json &obj, const std::string &ptr, const std::string &who) const {
    const json *j = find(obj, "shape");
    if (!j) fail(ptr, who + " has no \"shape\"");
    std::string sp = ptr + "/shape";
    if (!j->is_array()) fail(sp, "shape of " + who + " must be an array of integers, got " +
                                     describeJson(*j));
    if (j->size() > kMaxRank)
      fail(sp, "shape of " + who + ": " + rankLimitText(j->size()));
    Shape shape;
    for (size_t i = 0; i < j->size(); ++i) {
      const json &d = (*j)[i];
      std::string dp = child(sp, i);
      if (!d.is_number_integer())
        fail(dp, "dimension of " + who + " must be an integer, got " + describeJson(d));
      if (d.is_number_unsigned() &&
          d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(sp, "overflowing shape of " + who + ": dimension " + describeJson(d) +
                     " is out of range");
      int64_t v = d.get<int64_t>();
      if (v < 0) fail(dp, "negative dimension " + std::to_string(v) + " in shape of " + who);
      shape.push_back(v);
    }
    if (!checkedNumElements(shape))
      fail(sp, "overflowing shape of " + who + ": " + shapeText(shape) + " has more than 2^40 "
               "elements");
    return shape;
  }

  DType readDType(const json &obj, const std::string &ptr, const std::string &who,
                  bool floatOnly) const {
    const json *j = find(obj, "dtype");
    if (!j) return DType::F32;
    std::string dp = ptr + "/dtype";
    if (!j->is_string())
      fail(dp, "bad dtype " + describeJson(*j) + " for " + who +
                   "; expected " + ops::dtypeNameList(true));
    auto t = parseDType(j->get<std::string>());
    if (!t)
      fail(dp, "bad dtype " + quoteName(j->get<std::string>()) + " for " + who +
                   "; expected " + ops::dtypeNameList(true));
    if (floatOnly && *t != DType::F32)
      fail(dp, "bad dtype " + quoteName(j->get<std::string>()) + " for " + who +
                   "; parameters and state are f32 (master weights: --precision=bf16 or fp16 "
                   "runs their uses in the low type)");
    return *t;
  }

  /// Reads an optional "device": a concrete device or a group name.
  std::string readDevice(const json &obj, const std::string &ptr, const std::string &who) const {
    const json *j = find(obj, "device");
    if (!j) return "";
    std::string dp = ptr + "/device";
    if (!j->is_string())
      fail(dp, "unknown device " + describeJson(*j) + " for " + who +
                   "; expected cpu:N, gpu:N or a group name");
    std::string d = j->get<std::string>();
    if (!parseDevice(d) && !parseDeviceSet(d) && !isValidGroupName(d))
      fail(dp, "unknown device " + quoteName(d) + " for " + who +
                   "; expected cpu:N, gpu:N (N < 1024) or a group name "
                   "([A-Za-z_][A-Za-z0-9_.-]*)");
    return d;
  }

  double initNumber(const json &obj, const std::string &ptr, const std::string &key,
                    double dflt, const std::string &who) const {
    const json *j = find(obj, key);
    if (!j) return dflt;
    if (!j->is_number())
      fail(child(ptr, key), "bad init of " + who + ": " + key + " must be a number, got " +
                                describeJson(*j));
    return j->get<double>();
  }

  InitSpec readInit(const json &obj, const std::string &ptr, const std::string &who) const {
    const json *j = find(obj, "init");
    if (!j) fail(ptr, who + " has no \"init\"");
    std::string ip = ptr + "/init";
    const char *forms = " (expected \"zeros\", \"ones\", {\"constant\": v}, {\"uniform\": "
                        "{\"low\", \"high\"}}, {\"normal\": {\"mean\", \"std\"}} or "
                        "{\"xavier\": {\"magnitude\"}})";
    std::string kind;
    const json *args = nullptr;
    if (j->is_string()) {
      kind = j->get<std::string>();
    } else if (j->is_object() && j->size() == 1) {
      kind = j->begin().key();
      args = &j->begin().value();
      ip = child(ip, kind);
    } else {
      fail(ip, "bad init of " + who + ": " + describeJson(*j) + forms);
    }
    const std::vector<std::string> kinds = {"constant", "zeros",  "ones",
                                            "uniform",  "normal", "xavier"};
    InitSpec init;
    if (kind == "zeros" || kind == "ones") {
      if (args) fail(ip, "bad init of " + who + ": '" + kind + "' takes no arguments; write \"" +
                             kind + "\"");
      init.kind = kind == "zeros" ? InitSpec::Zeros : InitSpec::Ones;
      return init;
    }
    if (kind == "constant") {
      if (!args || !args->is_number())
        fail(ip, "bad init of " + who + ": constant needs a number, as {\"constant\": 0.5}");
      init.kind = InitSpec::Constant;
      init.a = args->get<double>();
      return init;
    }
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      fail(ip, "bad init of " + who + ": unknown initialiser " + quoteName(kind) +
                   suggestion(kind, kinds) + forms);
    static const json empty = json::object();
    const json &a = args ? *args : empty;
    if (!a.is_object())
      fail(ip, "bad init of " + who + ": arguments of " + kind + " must be an object, got " +
                   describeJson(a));
    if (kind == "uniform") {
      checkKeys(a, ip, {"low", "high"}, "argument of uniform", who);
      init.kind = InitSpec::Uniform;
      init.a = initNumber(a, ip, "low", -0.07, who);
      init.b = initNumber(a, ip, "high", 0.07, who);
      if (!(init.a <= init.b))
        fail(ip, "bad init of " + who + ": uniform needs low <= high");
    } else if (kind == "normal") {
      checkKeys(a, ip, {"mean", "std"}, "argument of normal", who);
      init.kind = InitSpec::Normal;
      init.a = initNumber(a, ip, "mean", 0.0, who);
      init.b = initNumber(a, ip, "std", 0.01, who);
      if (!(init.b >= 0)) fail(ip + "/std", "bad init of " + who + ": std must be >= 0");
    } else {
      checkKeys(a, ip, {"magnitude"}, "argument of xavier", who);
      init.kind = InitSpec::Xavier;
      init.a = initNumber(a, ip, "magnitude", 3.0, who);
      if (!(init.a > 0)) fail(ip + "/magnitude", "bad init of " + who + ": magnitude must be > 0");
    }
    return init;
  }

  void readInputs(const json &j) {
    expectObject(j, "/inputs", "\"inputs\"");
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string ptr = child("/inputs", it.key());
      std::string name = nameOf(it.key(), ptr, "input name");
      std::string who = "'" + name + "' (input)";
      const json &obj = expectObject(it.value(), ptr, "input " + quoteName(name));
      checkKeys(obj, ptr, kInputKeys, "key", who);
      defineName(name, ptr, ptr);
      DType dt = readDType(obj, ptr, who, false);
      Shape shape = readShape(obj, ptr, who);
      std::string dev = readDevice(obj, ptr, who);
      Node *n = g_->addInput(name, TensorType{dt, shape});
      n->device = dev;
      n->jsonPath = ptr;
      n->shard = readShard(obj, ptr, who, shape);
      n->spmd = readSpmd(obj, ptr, who);
    }
  }

  void readParams(const json &j) {
    expectObject(j, "/params", "\"params\"");
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string ptr = child("/params", it.key());
      std::string name = nameOf(it.key(), ptr, "param name");
      std::string who = "'" + name + "' (param)";
      const json &obj = expectObject(it.value(), ptr, "param " + quoteName(name));
      checkKeys(obj, ptr, kParamKeys, "key", who);
      defineName(name, ptr, ptr);
      DType dt = readDType(obj, ptr, who, true);
      Shape shape = readShape(obj, ptr, who);
      InitSpec init = readInit(obj, ptr, who);
      std::string dev = readDevice(obj, ptr, who);
      Node *n = g_->addParam(name, TensorType{dt, shape}, init);
      n->device = dev;
      n->jsonPath = ptr;
      n->lrMult = readMult(obj, ptr, "lr_mult", who);
      n->wdMult = readMult(obj, ptr, "wd_mult", who);
      n->mirrorOf = readMirrorOf(obj, ptr, who);
      n->shard = readShard(obj, ptr, who, shape);
      n->shardOf = readShardOf(obj, ptr, who);
      n->spmd = readSpmd(obj, ptr, who);
    }
  }

  /// "groups": {"stage0": ["cpu:0", "cpu:1"], ...}: devices of each group.
  void readGroups(const json &j) {
    expectObject(j, "/groups", "\"groups\"");
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string ptr = child("/groups", it.key());
      if (!isValidGroupName(it.key()))
        fail(ptr, "invalid group name " + quoteName(it.key()) +
                      " (expected [A-Za-z_][A-Za-z0-9_.-]*, not of the form kind:N)");
      const json &list = it.value();
      if (!list.is_array() || list.empty())
        fail(ptr, "group " + quoteName(it.key()) +
                      " must map to a non-empty array of devices, got " + describeJson(list));
      std::vector<std::string> devices;
      for (size_t i = 0; i < list.size(); ++i) {
        std::string d = expectString(list[i], child(ptr, i), "device of group " + quoteName(it.key()));
        if (!parseDevice(d))
          fail(child(ptr, i), "invalid device " + quoteName(d) + " in group " +
                                  quoteName(it.key()) + " (expected cpu:N or gpu:N)");
        devices.push_back(parseDevice(d)->str());
      }
      if (devices.size() > 1 && !parseDeviceSet(joinText(devices, "+")))
        fail(ptr, "the devices of group " + quoteName(it.key()) + " (" + joinText(devices, ", ") +
                      ") must be distinct, of one kind, and at most 64");
      g_->groups[it.key()] = devices;
    }
  }

  /// "shard": D of an input or param: the axis a tensor-parallel group
  /// splits it along (the group size is checked when it is placed).
  std::optional<int64_t> readShard(const json &obj, const std::string &ptr, const std::string &who,
                                   const Shape &shape) const {
    const json *j = find(obj, "shard");
    if (!j) return std::nullopt;
    if (!j->is_number_integer() || j->get<int64_t>() < 0 ||
        j->get<int64_t>() >= int64_t(shape.size()))
      fail(ptr + "/shard", "\"shard\" of " + who + " must be an axis of its shape " +
                               shapeText(shape) + " (0 to " + std::to_string(int64_t(shape.size()) - 1) +
                               "), got " + describeJson(*j));
    return j->get<int64_t>();
  }

  /// "spmd" of a node made by tensor-parallel: {"of", "index", "size",
  /// "layout"} (the verifier checks what it claims).
  std::optional<Node::Spmd> readSpmd(const json &obj, const std::string &ptr,
                                     const std::string &who) const {
    const json *j = find(obj, "spmd");
    if (!j) return std::nullopt;
    std::string sp = ptr + "/spmd";
    std::string what = "\"spmd\" of " + who;
    expectObject(*j, sp, what);
    checkKeys(*j, sp, kSpmdKeys, "key", what);
    for (const char *key : {"of", "index", "size", "layout"})
      if (!find(*j, key)) fail(sp, what + " has no \"" + key + "\"");
    Node::Spmd s;
    s.of = nameOf((*j)["of"], sp + "/of", "logical value name");
    s.index = expectInt((*j)["index"], sp + "/index", "index of " + what);
    s.size = expectInt((*j)["size"], sp + "/size", "size of " + what);
    std::string layout = expectString((*j)["layout"], sp + "/layout", "layout of " + what);
    if (!ops::parseLayout(layout, s.layout))
      fail(sp + "/layout", "unknown layout " + quoteName(layout) + " in " + what +
                               " (expected R, S(d) or P)");
    if (s.size < 2 || s.size > 64 || s.index < 0 || s.index >= s.size)
      fail(sp, what + " must have 2 to 64 members and an index among them, got index " +
                   std::to_string(s.index) + " of " + std::to_string(s.size));
    return s;
  }

  /// A param's lr_mult or wd_mult: a finite number >= 0, default 1.
  double readMult(const json &obj, const std::string &ptr, const std::string &key,
                  const std::string &who) const {
    const json *j = find(obj, key);
    if (!j) return 1.0;
    std::string p = child(ptr, key);
    if (!j->is_number()) fail(p, key + " of " + who + " must be a number, got " + describeJson(*j));
    double v = j->get<double>();
    if (!(v >= 0) || !std::isfinite(v))
      fail(p, key + " of " + who + " must be a finite number >= 0, got " + describeJson(*j));
    return v;
  }

  void readStates(const json &j) {
    expectObject(j, "/state", "\"state\"");
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string ptr = child("/state", it.key());
      std::string name = nameOf(it.key(), ptr, "state name");
      std::string who = "'" + name + "' (state)";
      const json &obj = expectObject(it.value(), ptr, "state " + quoteName(name));
      checkKeys(obj, ptr, kStateKeys, "key", who);
      defineName(name, ptr, ptr);
      DType dt = readDType(obj, ptr, who, true);
      Shape shape = readShape(obj, ptr, who);
      InitSpec init = readInit(obj, ptr, who);
      const json *p = find(obj, "param");
      if (!p) fail(ptr, who + " has no \"param\"");
      std::string param = expectString(*p, ptr + "/param", "\"param\" of " + who);
      Node *pn = g_->find(param);
      if (!pn || pn->kind != NodeKind::Param)
        fail(ptr + "/param", "unknown param " + quoteName(param) + " for " + who);
      std::string dev = readDevice(obj, ptr, who);
      Node *n = g_->addState(name, TensorType{dt, shape}, init, param);
      n->device = dev;
      n->jsonPath = ptr;
      n->mirrorOf = readMirrorOf(obj, ptr, who);
      n->shardOf = readShardOf(obj, ptr, who);
      n->spmd = readSpmd(obj, ptr, who);
    }
  }

  /// "shard_of" of a ZeRO-1 optimizer state shard: {"tensor", "index",
  /// "count", "shape"} (the verifier checks the set of shards).
  std::optional<Node::ShardOf> readShardOf(const json &obj, const std::string &ptr,
                                           const std::string &who) const {
    const json *j = find(obj, "shard_of");
    if (!j) return std::nullopt;
    std::string sp = ptr + "/shard_of";
    std::string what = "\"shard_of\" of " + who;
    expectObject(*j, sp, what);
    checkKeys(*j, sp, kShardOfKeys, "key", what);
    Node::ShardOf s;
    for (const char *key : {"tensor", "index", "count", "shape"})
      if (!find(*j, key)) fail(sp, what + " has no \"" + key + "\"");
    s.of = nameOf((*j)["tensor"], sp + "/tensor", "shard tensor name");
    s.index = expectInt((*j)["index"], sp + "/index", "index of " + what);
    s.count = expectInt((*j)["count"], sp + "/count", "count of " + what);
    s.shape = readShape(*j, sp, what);
    if (const json *a = find(*j, "axis")) {
      s.axis = expectInt(*a, sp + "/axis", "axis of " + what);
      if (s.axis < 0 || s.axis >= int64_t(s.shape.size()))
        fail(sp + "/axis", "axis of " + what + " must be an axis of " + shapeText(s.shape) +
                               ", got " + std::to_string(s.axis));
    }
    return s;
  }

  /// "mirror_of" of a data-parallel replica's param or state: the name of
  /// the tensor it mirrors (the verifier checks what it names).
  std::string readMirrorOf(const json &obj, const std::string &ptr, const std::string &who) const {
    const json *m = find(obj, "mirror_of");
    if (!m) return "";
    std::string name = expectString(*m, ptr + "/mirror_of", "\"mirror_of\" of " + who);
    if (name.empty()) fail(ptr + "/mirror_of", "\"mirror_of\" of " + who + " is empty");
    return name;
  }

  /// Reads one attribute value as the type its schema declares.
  AttrValue readAttr(const json &j, const AttrSpec &spec, const std::string &ptr,
                     const std::string &who) const {
    auto wrongType = [&]() -> std::string {
      return "attribute '" + spec.name + "' of " + who + " must be " +
             attrTypeName(spec.type) + ", got " + describeJson(j);
    };
    switch (spec.type) {
    case AttrType::Bool:
      if (!j.is_boolean()) fail(ptr, wrongType());
      return j.get<bool>();
    case AttrType::Int:
      if (!j.is_number_integer()) fail(ptr, wrongType());
      return expectInt(j, ptr, "attribute '" + spec.name + "' of " + who);
    case AttrType::Float:
      if (!j.is_number()) fail(ptr, wrongType());
      return j.get<double>();
    case AttrType::String:
      if (!j.is_string()) fail(ptr, wrongType());
      return j.get<std::string>();
    case AttrType::Ints: {
      if (!j.is_array()) fail(ptr, wrongType());
      std::vector<int64_t> xs;
      for (size_t i = 0; i < j.size(); ++i) {
        const json &e = j[i];
        if (!e.is_number_integer())
          fail(child(ptr, i), "attribute '" + spec.name + "' of " + who +
                                  " must be int list, got element " + describeJson(e));
        xs.push_back(expectInt(e, child(ptr, i), "element of attribute '" + spec.name + "'"));
      }
      return xs;
    }
    }
    fail(ptr, wrongType());
  }

  void readNodes(const json &j) {
    if (!j.is_array()) fail("/nodes", "\"nodes\" must be an array, got " + describeJson(j));
    std::vector<std::string> opNames;
    for (const OpInfo &r : allOps()) opNames.emplace_back(r.name);
    for (size_t i = 0; i < j.size(); ++i) {
      std::string ptr = child("/nodes", i);
      const json &obj = j[i];
      if (!obj.is_object()) fail(ptr, "node must be an object, got " + describeJson(obj));
      const json *nj = find(obj, "name");
      if (!nj) fail(ptr, "node has no \"name\"");
      std::string name = nameOf(*nj, ptr + "/name", "node name");
      checkKeys(obj, ptr, kNodeKeys, "key", quoteName(name));
      defineName(name, ptr, ptr + "/name");

      const json *oj = find(obj, "op");
      if (!oj) fail(ptr, "node " + quoteName(name) + " has no \"op\"");
      std::string opName = expectString(*oj, ptr + "/op", "\"op\" of " + quoteName(name));
      const OpInfo *info = lookupOp(opName);
      if (!info)
        fail(ptr + "/op", "unknown op " + quoteName(opName) + " in " + quoteName(name) +
                              suggestion(opName, opNames));
      std::string who = quoteName(name) + " (" + info->name + ")";

      PendingNode p;
      p.obj = &obj;
      p.ptr = ptr;
      p.info = info;
      if (const json *ij = find(obj, "inputs")) {
        if (!ij->is_array())
          fail(ptr + "/inputs", "\"inputs\" of " + who + " must be an array of names, got " +
                                    describeJson(*ij));
        for (size_t k = 0; k < ij->size(); ++k)
          p.operandNames.push_back(
              expectString((*ij)[k], child(ptr + "/inputs", k), "operand of " + who));
      }
      int n = int(p.operandNames.size());
      if (!info->acceptsArity(n)) {
        std::string names = info->operands.empty() ? "" : " (" + joinText(info->operands) + ")";
        if (info->variadic) names = " (" + info->operandName(0) + ", ...)";
        fail(find(obj, "inputs") ? ptr + "/inputs" : ptr,
             "wrong arity in " + who + ": takes " + info->arityText() + " operand(s)" + names +
                 ", got " + std::to_string(n));
      }
      if (const json *aj = find(obj, "attrs")) {
        std::string ap = ptr + "/attrs";
        if (!aj->is_object())
          fail(ap, "\"attrs\" of " + who + " must be an object, got " + describeJson(*aj));
        std::vector<std::string> attrNames;
        for (const AttrSpec &s : info->attrs) attrNames.push_back(s.name);
        for (auto it = aj->begin(); it != aj->end(); ++it) {
          const AttrSpec *spec = info->findAttr(it.key());
          if (!spec)
            fail(child(ap, it.key()),
                 "unknown attribute " + quoteName(it.key()) + " in " + who +
                     suggestion(it.key(), attrNames) +
                     (attrNames.empty() ? " (the op has no attributes)"
                                        : " (allowed: " + joinText(attrNames) + ")"));
          p.attrs[spec->name] = readAttr(it.value(), *spec, child(ap, it.key()), who);
        }
      }
      for (const AttrSpec &s : info->attrs)
        if (!s.defaultValue && !p.attrs.count(s.name))
          fail(find(obj, "attrs") ? ptr + "/attrs" : ptr,
               "missing required attribute '" + s.name + "' in " + who);
      std::string dev = readDevice(obj, ptr, who);
      bool backward = false;
      if (const json *bj = find(obj, "backward")) {
        if (!bj->is_boolean())
          fail(ptr + "/backward", "\"backward\" of " + who + " must be a boolean, got " +
                                      describeJson(*bj));
        backward = bj->get<bool>();
      }
      std::string origin;
      if (const json *oj2 = find(obj, "origin"))
        origin = expectString(*oj2, ptr + "/origin", "\"origin\" of " + who);

      p.node = g_->addOp(name, info->kind, {}, {}, TensorType{});
      p.node->device = dev;
      p.node->backward = backward;
      p.node->origin = origin;
      p.node->jsonPath = ptr;
      p.node->spmd = readSpmd(obj, ptr, who);
      pendingIndex_[name] = int(pending_.size());
      pending_.push_back(std::move(p));
    }
  }

  void resolveOperands() {
    for (PendingNode &p : pending_) {
      std::string who = p.node->describe();
      for (size_t k = 0; k < p.operandNames.size(); ++k) {
        const std::string &on = p.operandNames[k];
        Node *in = g_->find(on);
        if (!in)
          fail(child(p.ptr + "/inputs", k), "unknown value " + quoteName(on) + " in " + who +
                                                suggestion(on, allNames()));
        p.node->inputs.push_back(in);
        auto it = pendingIndex_.find(on);
        p.operandNodes.push_back(it == pendingIndex_.end() ? -1 : it->second);
      }
    }
  }

  std::vector<std::string> allNames() const {
    std::vector<std::string> names;
    for (const auto &n : g_->nodes()) names.push_back(n->name);
    return names;
  }

  /// Kahn's algorithm over the op nodes, ties broken by array index.
  std::vector<int> topoOrder() const {
    size_t n = pending_.size();
    std::vector<int> missing(n, 0);
    std::vector<std::vector<int>> users(n);
    for (size_t i = 0; i < n; ++i) {
      std::set<int> distinct;
      for (int d : pending_[i].operandNodes)
        if (d >= 0) distinct.insert(d);
      missing[i] = int(distinct.size());
      for (int d : distinct) users[size_t(d)].push_back(int(i));
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (size_t i = 0; i < n; ++i)
      if (missing[i] == 0) ready.push(int(i));
    std::vector<int> order;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int u : users[size_t(i)])
        if (--missing[size_t(u)] == 0) ready.push(u);
    }
    if (order.size() != n) reportCycle(missing);
    return order;
  }

  /// Every node left with missing operands has one such operand that is also
  /// left, so walking those operands from any of them must close a cycle.
  [[noreturn]] void reportCycle(const std::vector<int> &missing) const {
    int start = 0;
    while (missing[size_t(start)] == 0) ++start;
    std::vector<int> path;
    std::map<int, size_t> seenAt;
    int cur = start;
    while (!seenAt.count(cur)) {
      seenAt[cur] = path.size();
      path.push_back(cur);
      int next = -1;
      for (int d : pending_[size_t(cur)].operandNodes)
        if (d >= 0 && missing[size_t(d)] > 0) {
          next = d;
          break;
        }
      MPC_ASSERT(next >= 0, "cycle walk reached a node without a pending operand");
      cur = next;
    }
    std::vector<int> cycle(path.begin() + long(seenAt[cur]), path.end());
    // Start at the node that comes first in the file.
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    const PendingNode &first = pending_[size_t(cycle.front())];
    std::string chain;
    for (size_t k = 0; k < cycle.size(); ++k) {
      const std::string &a = pending_[size_t(cycle[k])].node->name;
      const std::string &b = pending_[size_t(cycle[(k + 1) % cycle.size()])].node->name;
      chain += (k ? ", " : "") + quoteName(a) + " uses " + quoteName(b);
    }
    fail(first.ptr, "cycle through " + first.node->describe() + ": " + chain);
  }

  void inferTypes(const std::vector<int> &order) {
    for (int i : order) {
      PendingNode &p = pending_[size_t(i)];
      std::string who = p.node->describe();
      try {
        p.node->attrs = completeAttrs(*p.info, p.attrs);
      } catch (const RuleError &e) {
        fail(p.ptr + "/attrs", std::string(e.what()) + " in " + who);
      }
      TensorType t;
      try {
        t = inferNodeType(*p.info, p.node->inputs, p.node->attrs);
      } catch (const RuleError &e) {
        // A rule says which kind of mismatch it found ("type mismatch: "
        // for a float type the op does not take); shape by default.
        std::string msg = e.what(), kind = "shape mismatch";
        for (const char *prefix : {"shape mismatch: ", "type mismatch: "})
          if (msg.rfind(prefix, 0) == 0) {
            kind = std::string(prefix).substr(0, std::string(prefix).size() - 2);
            msg = msg.substr(std::string(prefix).size());
          }
        fail(p.ptr, kind + " in " + who + ": " + msg);
      }
      if (t.shape.size() > kMaxRank)
        fail(p.ptr, "result of " + who + " " + t.str() + ": " + rankLimitText(t.shape.size()));
      if (!checkedNumElements(t.shape))
        fail(p.ptr, "overflowing shape of " + who + ": result " + shapeText(t.shape) +
                        " has more than 2^40 elements");
      p.node->type = t;
    }
  }

  void readLoss(const json &j) {
    std::string name = expectString(j, "/loss", "\"loss\"");
    Node *n = g_->find(name);
    if (!n) fail("/loss", "loss " + quoteName(name) + " not found" + suggestion(name, allNames()));
    if (!(n->type.dtype == DType::F32 && n->type.shape.empty()))
      fail("/loss", "loss " + n->describe() + " must be a scalar f32, got " + n->type.str());
    g_->loss = name;
  }

  void readOutputs(const json &j) {
    if (!j.is_array())
      fail("/outputs", "\"outputs\" must be an array of names, got " + describeJson(j));
    for (size_t i = 0; i < j.size(); ++i) {
      std::string p = child("/outputs", i);
      std::string name = expectString(j[i], p, "output");
      if (!g_->find(name))
        fail(p, "output " + quoteName(name) + " not found" + suggestion(name, allNames()));
      if (std::find(g_->outputs.begin(), g_->outputs.end(), name) != g_->outputs.end())
        fail(p, "duplicate output " + quoteName(name));
      g_->outputs.push_back(name);
    }
  }

  double optNumber(const json &args, const std::string &ptr, const std::string &key,
                   double dflt, double lo, bool loOpen, double hi, bool hiOpen) const {
    const json *j = find(args, key);
    if (!j) return dflt;
    std::string p = child(ptr, key);
    if (!j->is_number())
      fail(p, "bad optimizer: " + key + " must be a number, got " + describeJson(*j));
    double v = j->get<double>();
    bool ok = (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
    if (!ok) {
      std::string range = std::string(loOpen ? "(" : "[") + formatNumber(lo) + ", " +
                          (std::isinf(hi) ? "inf)" : formatNumber(hi) + (hiOpen ? ")" : "]"));
      fail(p, "bad optimizer: " + key + " must be in " + range + ", got " + describeJson(*j));
    }
    return v;
  }

  void readOptimizer(const json &j) {
    const std::string ptr = "/optimizer";
    const std::vector<std::string> kinds = {"sgd", "adam", "adamw"};
    std::string kind;
    const json *args = nullptr;
    std::string ap = ptr;
    if (j.is_string()) {
      kind = j.get<std::string>();
    } else if (j.is_object() && j.size() == 1) {
      kind = j.begin().key();
      args = &j.begin().value();
      ap = child(ptr, kind);
    } else {
      fail(ptr, "bad optimizer " + describeJson(j) +
                    "; expected {\"sgd\": {...}}, {\"adam\": {...}} or {\"adamw\": {...}}");
    }
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      fail(ap, "bad optimizer: unknown optimizer " + quoteName(kind) + suggestion(kind, kinds) +
                   " (expected sgd, adam or adamw)");
    static const json empty = json::object();
    const json &a = args ? *args : empty;
    if (!a.is_object())
      fail(ap, "bad optimizer: settings of " + kind + " must be an object, got " +
                   describeJson(a));
    const double inf = std::numeric_limits<double>::infinity();
    OptimizerSpec o;
    o.kind = kind;
    if (kind == "sgd") {
      checkKeys(a, ap, kSgdKeys, "setting of sgd");
      o.lr = optNumber(a, ap, "lr", 0.01, 0, false, inf, false);
      o.momentum = optNumber(a, ap, "momentum", o.momentum, 0, false, inf, false);
      o.dampening = optNumber(a, ap, "dampening", o.dampening, -inf, false, inf, false);
      o.weightDecay = optNumber(a, ap, "weight_decay", o.weightDecay, 0, false, inf, false);
      if (const json *n = find(a, "nesterov")) {
        if (!n->is_boolean())
          fail(ap + "/nesterov", "bad optimizer: nesterov must be a boolean, got " +
                                     describeJson(*n));
        o.nesterov = n->get<bool>();
      }
      if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
        fail(ap + "/nesterov",
             "bad optimizer: nesterov momentum requires a momentum and zero dampening");
    } else {
      checkKeys(a, ap, kAdamKeys, "setting of " + kind);
      o.lr = optNumber(a, ap, "lr", 0.001, 0, false, inf, false);
      o.beta1 = optNumber(a, ap, "beta1", o.beta1, 0, false, 1, true);
      o.beta2 = optNumber(a, ap, "beta2", o.beta2, 0, false, 1, true);
      o.eps = optNumber(a, ap, "eps", o.eps, 0, false, inf, false);
      // AdamW's decay defaults to torch.optim.AdamW's, plain Adam's to the op's.
      double decay =
          kind == "adamw" ? 0.01 : updateOpDefault<double>(OpKind::AdamUpdate, "weight_decay");
      o.weightDecay = optNumber(a, ap, "weight_decay", decay, 0, false, inf, false);
    }
    g_->optimizer = o;
  }

  void readPipeline(const json &j) {
    const std::string ptr = "/pipeline";
    if (!j.is_object())
      fail(ptr, "\"pipeline\" must be an object like {\"microbatches\": 4, \"schedule\": "
                "\"1f1b\"}, got " + describeJson(j));
    checkKeys(j, ptr, kPipelineKeys, "pipeline setting");
    // A count of micro-batches, `key`'s value, in [1, kMaxMicrobatches].
    auto count = [&](const json &m, const std::string &key) {
      if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > kMaxMicrobatches)
        fail(ptr + "/" + key,
             key + " must be an integer in [1, " + std::to_string(kMaxMicrobatches) + "]" +
                 (m.is_number_integer() && m.get<int64_t>() > kMaxMicrobatches
                      ? std::string(" (") + kMaxMicrobatchesReason + ")"
                      : "") +
                 ", got " + describeJson(m));
      return m.get<int64_t>();
    };
    if (const json *m = find(j, "microbatches")) g_->pipeline.microbatches = count(*m, "microbatches");
    if (const json *s = find(j, "schedule")) {
      std::vector<std::string> names(std::begin(kPipelineSchedules), std::end(kPipelineSchedules));
      std::string name = s->is_string() ? s->get<std::string>() : "";
      if (std::find(names.begin(), names.end(), name) == names.end())
        fail(ptr + "/schedule", "unknown schedule " + describeJson(*s) + suggestion(name, names) +
                                    " (expected " + pipelineScheduleList() + ")");
      g_->pipeline.schedule = name;
    }
    if (const json *f = find(j, "in_flight")) g_->pipeline.inFlight = count(*f, "in_flight");
  }

  void readStages(const json &j) {
    if (!j.is_array())
      fail("/stages", "\"stages\" must be an array of stage names, got " + describeJson(j));
    std::vector<std::string> names;
    for (GraphStage s : allGraphStages()) names.emplace_back(graphStageName(s));
    for (size_t i = 0; i < j.size(); ++i) {
      std::string p = child("/stages", i);
      std::string s = expectString(j[i], p, "stage");
      auto st = parseGraphStage(s);
      if (!st)
        fail(p, "unknown stage " + quoteName(s) + suggestion(s, names) + " (known: " +
                    joinText(names) + ")");
      g_->stages |= *st;
    }
  }

  void readGradients(const json &j) {
    expectObject(j, "/gradients", "\"gradients\"");
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string p = child("/gradients", it.key());
      Node *param = g_->find(it.key());
      if (!param || param->kind != NodeKind::Param)
        fail(p, "gradient of unknown param " + quoteName(it.key()));
      std::string grad = expectString(it.value(), p, "gradient of " + quoteName(it.key()));
      if (!g_->find(grad))
        fail(p, "gradient " + quoteName(grad) + " of " + param->describe() + " not found");
      g_->gradients.set(it.key(), grad);
    }
  }

  const std::string &text_;
  const std::string &file_;
  std::unique_ptr<Graph> g_;
  std::map<std::string, std::string> definedAt_;
  std::vector<PendingNode> pending_;
  std::map<std::string, int> pendingIndex_;
};

} // namespace

std::unique_ptr<Graph> readModelJson(const std::string &text, const std::string &file) {
  return ModelReader(text, file).read();
}

std::unique_ptr<Graph> readModelFile(const std::string &path) {
  return readModelJson(readFileText(path), path);
}

} // namespace mpc::ir
