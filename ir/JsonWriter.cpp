//===- ir/JsonWriter.cpp - Graph -> model.json --------------------------===//
//
// Writes the format the reader accepts (docs/ir.md), laid out like the
// hand-written examples: one input, param, state or node per line, so that
// two dumps diff line by line. Op node types are not written: the reader
// infers them again, which is also a check that they were consistent.
// Every attribute is written, defaults included, so a reader with other
// defaults still sees the same graph.
//
//===----------------------------------------------------------------------===//
#include "ir/JsonWriter.h"

#include "support/Error.h"

#include <nlohmann/json.hpp>

#include <sstream>

namespace mpc::ir {

namespace {

using json = nlohmann::ordered_json;

std::string scalar(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// One-line form with ", " and ": " separators, as in the examples. Only
/// used on the writer's own small values.
std::string inlineDump(const json &j) {
  if (j.is_object()) {
    std::string s = "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      s += (first ? "" : ", ") + scalar(json(it.key())) + ": " + inlineDump(it.value());
      first = false;
    }
    return s + "}";
  }
  if (j.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + inlineDump(j[i]);
    return s + "]";
  }
  return scalar(j);
}

json shapeJson(const Shape &shape) {
  json a = json::array();
  for (int64_t d : shape) a.push_back(d);
  return a;
}

json initJson(const InitSpec &init) {
  switch (init.kind) {
  case InitSpec::Constant: return json{{"constant", init.a}};
  case InitSpec::Zeros: return "zeros";
  case InitSpec::Ones: return "ones";
  case InitSpec::Uniform: return json{{"uniform", json{{"low", init.a}, {"high", init.b}}}};
  case InitSpec::Normal: return json{{"normal", json{{"mean", init.a}, {"std", init.b}}}};
  case InitSpec::Xavier: return json{{"xavier", json{{"magnitude", init.a}}}};
  }
  return "zeros";
}

json attrJson(const AttrValue &v) {
  switch (attrTypeOf(v)) {
  case AttrType::Bool: return std::get<bool>(v);
  case AttrType::Int: return std::get<int64_t>(v);
  case AttrType::Float: return std::get<double>(v);
  case AttrType::String: return std::get<std::string>(v);
  case AttrType::Ints: {
    json a = json::array();
    for (int64_t x : std::get<std::vector<int64_t>>(v)) a.push_back(x);
    return a;
  }
  }
  return nullptr;
}

json optimizerJson(const OptimizerSpec &o) {
  json args = json::object();
  args["lr"] = o.lr;
  if (o.kind == "sgd") {
    args["momentum"] = o.momentum;
    args["dampening"] = o.dampening;
    args["nesterov"] = o.nesterov;
    args["weight_decay"] = o.weightDecay;
  } else {
    args["beta1"] = o.beta1;
    args["beta2"] = o.beta2;
    args["eps"] = o.eps;
    args["weight_decay"] = o.weightDecay;
  }
  json j = json::object();
  j[o.kind] = args;
  return j;
}

json spmdJson(const Node::Spmd &s) {
  return json{{"of", s.of}, {"index", s.index}, {"size", s.size}, {"layout", s.layout.str()}};
}

json leafJson(const Node &n) {
  json j = json::object();
  j["shape"] = shapeJson(n.type.shape);
  if (n.type.dtype != DType::F32) j["dtype"] = dtypeName(n.type.dtype);
  if (n.init) j["init"] = initJson(*n.init);
  if (n.kind == NodeKind::State) j["param"] = n.origin;
  if (!n.device.empty()) j["device"] = n.device;
  if (n.lrMult != 1.0) j["lr_mult"] = n.lrMult;
  if (n.wdMult != 1.0) j["wd_mult"] = n.wdMult;
  if (!n.mirrorOf.empty()) j["mirror_of"] = n.mirrorOf;
  if (n.shard) j["shard"] = *n.shard;
  if (n.shardOf) {
    j["shard_of"] = json{{"tensor", n.shardOf->of},
                         {"index", n.shardOf->index},
                         {"count", n.shardOf->count},
                         {"shape", shapeJson(n.shardOf->shape)}};
    if (n.shardOf->axis >= 0) j["shard_of"]["axis"] = n.shardOf->axis;
  }
  if (n.spmd) j["spmd"] = spmdJson(*n.spmd);
  return j;
}

json nodeJson(const Node &n) {
  json j = json::object();
  j["name"] = n.name;
  j["op"] = n.info().name;
  json ins = json::array();
  for (const Node *in : n.inputs) ins.push_back(in ? in->name : std::string("<null>"));
  j["inputs"] = ins;
  if (!n.attrs.empty()) {
    json a = json::object();
    for (const auto &[k, v] : n.attrs) a[k] = attrJson(v);
    j["attrs"] = a;
  }
  if (!n.device.empty()) j["device"] = n.device;
  if (n.backward) j["backward"] = true;
  if (!n.origin.empty()) j["origin"] = n.origin;
  if (n.spmd) j["spmd"] = spmdJson(*n.spmd);
  return j;
}

/// Writes `"key": {` ... `}` with one member per line.
void writeObjectSection(std::ostringstream &os, const std::string &key,
                        const std::vector<std::pair<std::string, json>> &members, bool last) {
  os << "  " << scalar(json(key)) << ": {";
  for (size_t i = 0; i < members.size(); ++i)
    os << (i ? ",\n" : "\n") << "    " << scalar(json(members[i].first)) << ": "
       << inlineDump(members[i].second);
  os << (members.empty() ? "}" : "\n  }") << (last ? "\n" : ",\n");
}

} // namespace

const std::vector<GraphStage> &allGraphStages() {
  static const std::vector<GraphStage> stages = {kShaped, kPlaced, kCopiesExplicit,
                                                 kDifferentiated, kOptimized, kAutocast};
  return stages;
}

const char *graphStageName(GraphStage stage) {
  switch (stage) {
  case kShaped: return "shaped";
  case kPlaced: return "placed";
  case kCopiesExplicit: return "copies-explicit";
  case kDifferentiated: return "differentiated";
  case kOptimized: return "optimized";
  case kAutocast: return "autocast";
  }
  return "?";
}

std::optional<GraphStage> parseGraphStage(const std::string &name) {
  for (GraphStage s : allGraphStages())
    if (name == graphStageName(s)) return s;
  return std::nullopt;
}

std::string writeModelJson(const Graph &graph) {
  std::vector<std::pair<std::string, json>> inputs, params, states;
  std::vector<json> nodes;
  for (const auto &n : graph.nodes()) {
    switch (n->kind) {
    case NodeKind::Input: inputs.emplace_back(n->name, leafJson(*n)); break;
    case NodeKind::Param: params.emplace_back(n->name, leafJson(*n)); break;
    case NodeKind::State: states.emplace_back(n->name, leafJson(*n)); break;
    case NodeKind::Op: nodes.push_back(nodeJson(*n)); break;
    }
  }
  // Trailing sections decide which line ends the object.
  std::vector<std::pair<std::string, json>> tail;
  if (!graph.loss.empty()) tail.emplace_back("loss", graph.loss);
  if (!graph.outputs.empty()) {
    json o = json::array();
    for (const std::string &s : graph.outputs) o.push_back(s);
    tail.emplace_back("outputs", o);
  }
  if (graph.optimizer) tail.emplace_back("optimizer", optimizerJson(*graph.optimizer));
  if (graph.pipeline != PipelineSpec{}) {
    json pipeline = {{"microbatches", graph.pipeline.microbatches},
                     {"schedule", graph.pipeline.schedule}};
    if (graph.pipeline.inFlight > 0) pipeline["in_flight"] = graph.pipeline.inFlight;
    tail.emplace_back("pipeline", pipeline);
  }
  if (graph.dataParallel.replicas != 1)
    tail.emplace_back("data_parallel", graph.dataParallel.replicas);
  if (graph.precision != "fp32") tail.emplace_back("precision", graph.precision);
  if (!graph.groups.empty()) {
    json groups = json::object();
    for (const auto &[name, devices] : graph.groups) groups[name] = devices;
    tail.emplace_back("groups", groups);
  }
  if (graph.stages) {
    json s = json::array();
    for (GraphStage st : allGraphStages())
      if (graph.has(st)) s.push_back(graphStageName(st));
    tail.emplace_back("stages", s);
  }

  std::ostringstream os;
  os << "{\n";
  os << "  \"mpc\": 1,\n";
  os << "  \"name\": " << scalar(json(graph.name)) << ",\n";
  writeObjectSection(os, "inputs", inputs, false);
  writeObjectSection(os, "params", params, false);
  if (!states.empty()) writeObjectSection(os, "state", states, false);
  os << "  \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i)
    os << (i ? ",\n" : "\n") << "    " << inlineDump(nodes[i]);
  os << (nodes.empty() ? "]" : "\n  ]");
  for (const auto &[k, v] : tail) os << ",\n  " << scalar(json(k)) << ": " << inlineDump(v);
  if (!graph.gradients.empty()) {
    os << ",\n";
    std::vector<std::pair<std::string, json>> grads;
    for (const auto &[p, gname] : graph.gradients) grads.emplace_back(p, gname);
    writeObjectSection(os, "gradients", grads, true);
  } else {
    os << "\n";
  }
  os << "}\n";
  return os.str();
}

namespace {

std::string q(const std::string &s) { return "'" + s + "'"; }

std::string diffNodes(const Node &a, const Node &b) {
  std::string who = "node " + q(a.name) + ": ";
  if (a.kind != b.kind)
    return who + "kind " + nodeKindName(a.kind) + " vs " + nodeKindName(b.kind);
  if (a.isOp() && a.op != b.op)
    return who + "op " + a.info().name + " vs " + b.info().name;
  if (a.inputs.size() != b.inputs.size())
    return who + std::to_string(a.inputs.size()) + " vs " + std::to_string(b.inputs.size()) +
           " operands";
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    std::string an = a.inputs[i] ? a.inputs[i]->name : "<null>";
    std::string bn = b.inputs[i] ? b.inputs[i]->name : "<null>";
    if (an != bn) return who + "operand " + std::to_string(i) + " " + q(an) + " vs " + q(bn);
  }
  if (a.attrs != b.attrs) {
    for (const auto &[k, v] : a.attrs) {
      auto it = b.attrs.find(k);
      if (it == b.attrs.end()) return who + "attribute " + q(k) + " missing in the second";
      if (it->second != v)
        return who + "attribute " + q(k) + " " + attrValueStr(v) + " vs " +
               attrValueStr(it->second);
    }
    return who + "extra attributes in the second";
  }
  if (a.type != b.type) return who + "type " + a.type.str() + " vs " + b.type.str();
  if (a.device != b.device) return who + "device " + q(a.device) + " vs " + q(b.device);
  if (a.init != b.init)
    return who + "init " + (a.init ? a.init->str() : "none") + " vs " +
           (b.init ? b.init->str() : "none");
  if (a.origin != b.origin) return who + "origin " + q(a.origin) + " vs " + q(b.origin);
  if (a.mirrorOf != b.mirrorOf) return who + "mirror_of '" + a.mirrorOf + "' vs '" + b.mirrorOf + "'";
  if (a.shardOf != b.shardOf) return who + "shard_of differs";
  if (a.shard != b.shard) return who + "shard differs";
  if (a.spmd != b.spmd) return who + "spmd differs";
  if (a.lrMult != b.lrMult || a.wdMult != b.wdMult)
    return who + "lr_mult, wd_mult " + attrValueStr(a.lrMult) + ", " + attrValueStr(a.wdMult) +
           " vs " + attrValueStr(b.lrMult) + ", " + attrValueStr(b.wdMult);
  if (a.backward != b.backward)
    return who + "backward " + (a.backward ? "true" : "false") + " vs " +
           (b.backward ? "true" : "false");
  return "";
}

} // namespace

std::string diffGraphs(const Graph &a, const Graph &b) {
  if (a.name != b.name) return "graph name " + q(a.name) + " vs " + q(b.name);
  if (a.nodes().size() != b.nodes().size())
    return std::to_string(a.nodes().size()) + " vs " + std::to_string(b.nodes().size()) +
           " nodes";
  for (const auto &n : a.nodes()) {
    const Node *m = b.find(n->name);
    if (!m) return "node " + q(n->name) + " missing in the second graph";
    if (std::string d = diffNodes(*n, *m); !d.empty()) return d;
  }
  if (a.outputs != b.outputs) return "outputs differ";
  if (a.loss != b.loss) return "loss " + q(a.loss) + " vs " + q(b.loss);
  if (a.optimizer != b.optimizer) return "optimizer differs";
  if (a.pipeline != b.pipeline) return "pipeline differs";
  if (a.dataParallel != b.dataParallel) return "data parallelism differs";
  if (a.precision != b.precision) return "precision " + q(a.precision) + " vs " + q(b.precision);
  if (a.groups != b.groups) return "groups differ";
  if (a.stages != b.stages)
    return "stages " + std::to_string(a.stages) + " vs " + std::to_string(b.stages);
  if (a.gradients != b.gradients) return "gradients differ";
  return "";
}

} // namespace mpc::ir
