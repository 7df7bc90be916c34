//===- frontend/onnx/Fuse.cpp - exporters' decompositions, fused back -----===//
#include "frontend/onnx/Fuse.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace mpc::frontend::onnx {

namespace {

struct Graph {
  ::onnx::GraphProto &g;
  const std::function<const Const *(const std::string &)> &known;
  std::map<std::string, int> producer;          // value -> node index
  std::map<std::string, std::vector<int>> uses; // value -> consumer node indices
  std::set<std::string> outputs;
  std::set<int> removed;

  void index() {
    producer.clear();
    uses.clear();
    for (int i = 0; i < g.node_size(); ++i) {
      if (removed.count(i)) continue;
      for (const std::string &o : g.node(i).output()) producer[o] = i;
      for (const std::string &in : g.node(i).input())
        if (!in.empty()) uses[in].push_back(i);
    }
    for (const auto &o : g.output()) outputs.insert(o.name());
  }
  /// The single consumer of `value`, when it has exactly one and is not a
  /// graph output.
  const ::onnx::NodeProto *only(const std::string &value, int *index = nullptr) const {
    auto it = uses.find(value);
    if (it == uses.end() || it->second.size() != 1 || outputs.count(value)) return nullptr;
    if (index) *index = it->second[0];
    return &g.node(it->second[0]);
  }
  bool scalarNear(const std::string &value, double want) const {
    const Const *c = known(value);
    return c && c->scalarLike() && std::fabs(c->values[0] - want) <= 1e-6 * std::fabs(want);
  }
  /// The operand of binary node `n` other than `value`, or "".
  static std::string other(const ::onnx::NodeProto &n, const std::string &value) {
    if (n.input_size() != 2) return "";
    if (n.input(0) == value) return n.input(1);
    if (n.input(1) == value) return n.input(0);
    return "";
  }
};

/// Last-axis reduction of a ReduceMean with keepdims.
bool lastAxisMean(const ::onnx::NodeProto &n) {
  if (n.op_type() != "ReduceMean" || n.input_size() != 1) return false;
  Attrs a(n);
  std::vector<int64_t> axes = a.getInts("axes", {});
  return a.getBool("keepdims", 1) && axes.size() == 1 && axes[0] == -1;
}

/// The node index that makes `value`, or -1.
int producerOf(const Graph &G, const std::string &value) {
  auto p = G.producer.find(value);
  return p == G.producer.end() ? -1 : p->second;
}

/// `value` made by a binary `op` node with a single consumer, one operand a
/// scalar near `c`: the other operand, or "".
std::string byScalar(const Graph &G, const std::string &value, const char *op, double c) {
  int i = producerOf(G, value);
  if (i < 0 || !G.only(value)) return "";
  const ::onnx::NodeProto &n = G.g.node(i);
  if (n.op_type() != op || n.input_size() != 2) return "";
  if (G.scalarNear(n.input(1), c)) return n.input(0);
  if (std::string(op) == "Mul" && G.scalarNear(n.input(0), c)) return n.input(1);
  return "";
}

/// x³ as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x): x, or "".
std::string cubeOf(const Graph &G, const std::string &value) {
  int i = producerOf(G, value);
  if (i < 0 || !G.only(value)) return "";
  const ::onnx::NodeProto &n = G.g.node(i);
  if (n.op_type() == "Pow" && n.input_size() == 2 && G.scalarNear(n.input(1), 3.0)) return n.input(0);
  if (n.op_type() != "Mul" || n.input_size() != 2) return "";
  for (int k = 0; k < 2; ++k) {
    int sq = producerOf(G, n.input(k));
    if (sq < 0 || !G.only(n.input(k))) continue;
    const ::onnx::NodeProto &m = G.g.node(sq);
    if (m.op_type() == "Mul" && m.input_size() == 2 && m.input(0) == m.input(1) &&
        m.input(0) == n.input(1 - k))
      return m.input(0);
  }
  return "";
}

/// Every node that makes the values of `values` (the chain to remove).
void collect(const Graph &G, const std::vector<std::string> &values, std::vector<int> &out) {
  for (const std::string &v : values)
    if (int i = producerOf(G, v); i >= 0) out.push_back(i);
}

/// GELU as exporters write it (Fuse.h), from its Erf or Tanh node:
///   exact  f = erf(x / √2)   (or x · 1/√2)
///   tanh   f = tanh(√(2/π) · (x + 0.044715 · x³))
///   then   0.5 · x · (1 + f), as Mul(Mul(x, 1 + f), 0.5) or Mul(Mul(x, 0.5), 1 + f).
bool fuseGelu(Graph &G, int fIndex) {
  const ::onnx::NodeProto &f = G.g.node(fIndex);
  const bool exact = f.op_type() == "Erf";
  std::string x;
  std::vector<std::string> inner; // values of the chain before f
  if (exact) {
    x = byScalar(G, f.input(0), "Div", std::sqrt(2.0));
    if (x.empty()) x = byScalar(G, f.input(0), "Mul", 1 / std::sqrt(2.0));
    inner = {f.input(0)};
  } else {
    std::string sum = byScalar(G, f.input(0), "Mul", std::sqrt(2.0 / M_PI));
    int add = sum.empty() ? -1 : producerOf(G, sum);
    if (add < 0 || !G.only(sum) || G.g.node(add).op_type() != "Add") return false;
    const ::onnx::NodeProto &a = G.g.node(add);
    for (int k = 0; k < 2 && x.empty(); ++k) {
      std::string scaled = byScalar(G, a.input(1 - k), "Mul", 0.044715);
      std::string cubed = scaled.empty() ? "" : cubeOf(G, scaled);
      if (!cubed.empty() && cubed == a.input(k)) {
        x = cubed;
        inner = {f.input(0), sum, a.input(1 - k), scaled};
        if (int c = producerOf(G, scaled); c >= 0 && G.g.node(c).op_type() == "Mul")
          for (const std::string &in : G.g.node(c).input())
            if (in != x && producerOf(G, in) >= 0 && G.g.node(producerOf(G, in)).op_type() == "Mul")
              inner.push_back(in); // the x·x of Mul(x, Mul(x, x))
      }
    }
  }
  if (x.empty()) return false;
  int addIndex;
  const ::onnx::NodeProto *add = G.only(f.output(0), &addIndex);
  if (!add || add->op_type() != "Add" || !G.scalarNear(Graph::other(*add, f.output(0)), 1.0))
    return false;
  const std::string &onePlus = add->output(0);
  int mulIndex;
  const ::onnx::NodeProto *mul = G.only(onePlus, &mulIndex);
  if (!mul || mul->op_type() != "Mul") return false;
  std::string y = Graph::other(*mul, onePlus);
  int lastIndex = -1;
  std::vector<int> remove = {fIndex, addIndex};
  if (y == x) { // Mul(Mul(x, 1 + f), 0.5)
    const ::onnx::NodeProto *half = G.only(mul->output(0), &lastIndex);
    if (!half || half->op_type() != "Mul" || !G.scalarNear(Graph::other(*half, mul->output(0)), 0.5))
      return false;
    remove.push_back(mulIndex);
  } else if (byScalar(G, y, "Mul", 0.5) == x) { // Mul(Mul(x, 0.5), 1 + f)
    lastIndex = mulIndex;
    collect(G, {y}, remove);
  } else {
    return false;
  }
  collect(G, inner, remove);
  ::onnx::NodeProto fused;
  fused.set_op_type("Gelu");
  fused.set_name(G.g.node(lastIndex).name());
  fused.add_input(x);
  fused.add_output(G.g.node(lastIndex).output(0));
  auto *attr = fused.add_attribute();
  attr->set_name("approximate");
  attr->set_type(::onnx::AttributeProto::STRING);
  attr->set_s(exact ? "none" : "tanh");
  *G.g.mutable_node(lastIndex) = fused;
  for (int i : remove)
    if (i != lastIndex) G.removed.insert(i);
  return true;
}

bool fuseLayerNorm(Graph &G, int meanIndex) {
  const ::onnx::NodeProto &mean = G.g.node(meanIndex);
  if (!lastAxisMean(mean)) return false;
  std::string x = mean.input(0);
  int subIndex, powIndex, varIndex, epsIndex, sqrtIndex, divIndex;
  const ::onnx::NodeProto *sub = G.only(mean.output(0), &subIndex);
  if (!sub || sub->op_type() != "Sub" || sub->input(0) != x || sub->input(1) != mean.output(0))
    return false;
  // d = x - mean: used by the square and the division.
  auto du = G.uses.find(sub->output(0));
  if (du == G.uses.end() || du->second.size() != 2 || G.outputs.count(sub->output(0)))
    return false;
  powIndex = du->second[0];
  divIndex = du->second[1];
  if (G.g.node(powIndex).op_type() == "Div") std::swap(powIndex, divIndex);
  const ::onnx::NodeProto &pow = G.g.node(powIndex), &div = G.g.node(divIndex);
  bool square = (pow.op_type() == "Pow" && pow.input(0) == sub->output(0) &&
                 G.scalarNear(pow.input(1), 2.0)) ||
                (pow.op_type() == "Mul" && pow.input(0) == sub->output(0) &&
                 pow.input(1) == sub->output(0));
  if (!square || div.op_type() != "Div" || div.input(0) != sub->output(0)) return false;
  const ::onnx::NodeProto *var = G.only(pow.output(0), &varIndex);
  if (!var || !lastAxisMean(*var)) return false;
  const ::onnx::NodeProto *eps = G.only(var->output(0), &epsIndex);
  if (!eps || eps->op_type() != "Add") return false;
  const Const *e = G.known(Graph::other(*eps, var->output(0)));
  if (!e || !e->scalarLike()) return false;
  const ::onnx::NodeProto *sqrt = G.only(eps->output(0), &sqrtIndex);
  if (!sqrt || sqrt->op_type() != "Sqrt" || G.only(sqrt->output(0)) != &div) return false;
  // Optional affine: Mul by gamma, Add beta.
  std::string gamma, beta, out = div.output(0);
  std::vector<int> inner = {meanIndex, subIndex, powIndex, varIndex, epsIndex, sqrtIndex};
  int last = divIndex, gammaIndex, betaIndex;
  if (const ::onnx::NodeProto *mul = G.only(out, &gammaIndex); mul && mul->op_type() == "Mul") {
    std::string g = Graph::other(*mul, out);
    const ::onnx::NodeProto *add = G.only(mul->output(0), &betaIndex);
    if (!g.empty() && add && add->op_type() == "Add" && !Graph::other(*add, mul->output(0)).empty()) {
      gamma = g;
      beta = Graph::other(*add, mul->output(0));
      inner.push_back(divIndex);
      inner.push_back(gammaIndex);
      last = betaIndex;
      out = add->output(0);
    }
  }
  ::onnx::NodeProto fused;
  fused.set_op_type("LayerNormalization");
  fused.set_name(G.g.node(last).name());
  fused.add_input(x);
  if (!gamma.empty()) {
    fused.add_input(gamma);
    fused.add_input(beta);
  }
  fused.add_output(out);
  auto *axis = fused.add_attribute();
  axis->set_name("axis");
  axis->set_type(::onnx::AttributeProto::INT);
  axis->set_i(-1);
  auto *epsilon = fused.add_attribute();
  epsilon->set_name("epsilon");
  epsilon->set_type(::onnx::AttributeProto::FLOAT);
  epsilon->set_f(float(e->values[0]));
  *G.g.mutable_node(last) = fused;
  for (int i : inner) G.removed.insert(i);
  return true;
}

/// Pad(x) into a Conv, or an AveragePool without pads of its own: zeros on
/// the spatial axes only, the consumer's pads grow by them (an AveragePool
/// then counts them, as it counted the padded zeros).
bool fusePad(Graph &G, int padIndex) {
  const ::onnx::NodeProto &pad = G.g.node(padIndex);
  Attrs a(pad);
  if (a.getString("mode", "constant") != "constant") return false;
  std::vector<int64_t> pads;
  if (pad.input_size() >= 2 && !pad.input(1).empty()) {
    const Const *p = G.known(pad.input(1));
    if (!p) return false;
    for (double v : p->values) pads.push_back(int64_t(v));
    if (pad.input_size() >= 3 && !pad.input(2).empty()) {
      const Const *v = G.known(pad.input(2));
      if (!v || !v->scalarLike() || v->values[0] != 0) return false;
    }
  } else {
    pads = a.getInts("pads", {});
    if (a.getFloat("value", 0) != 0) return false;
  }
  if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5]) return false;
  int useIndex;
  const ::onnx::NodeProto *use = G.only(pad.output(0), &useIndex);
  if (!use || use->input(0) != pad.output(0)) return false;
  Attrs u(*use);
  bool pool = use->op_type() == "AveragePool";
  if (!pool && use->op_type() != "Conv") return false;
  if (u.getString("auto_pad", "NOTSET") != "NOTSET") return false;
  std::vector<int64_t> own = u.getInts("pads", {0, 0, 0, 0});
  if (own.size() != 4 || (pool && own != std::vector<int64_t>{0, 0, 0, 0})) return false;
  ::onnx::NodeProto fused = *use;
  fused.set_input(0, pad.input(0));
  auto set = [&](const char *name, std::vector<int64_t> ints, std::optional<int64_t> i) {
    ::onnx::AttributeProto *attr = nullptr;
    for (auto &x : *fused.mutable_attribute())
      if (x.name() == name) attr = &x;
    if (!attr) {
      attr = fused.add_attribute();
      attr->set_name(name);
    }
    attr->clear_ints();
    if (i) {
      attr->set_type(::onnx::AttributeProto::INT);
      attr->set_i(*i);
    } else {
      attr->set_type(::onnx::AttributeProto::INTS);
      for (int64_t v : ints) attr->add_ints(v);
    }
  };
  set("pads", {own[0] + pads[2], own[1] + pads[3], own[2] + pads[6], own[3] + pads[7]}, std::nullopt);
  if (pool) set("count_include_pad", {}, 1);
  *G.g.mutable_node(useIndex) = fused;
  G.removed.insert(padIndex);
  return true;
}

} // namespace

int fuseDecompositions(::onnx::GraphProto &graph,
                       const std::function<const Const *(const std::string &)> &known) {
  Graph G{graph, known, {}, {}, {}, {}};
  G.index();
  int fused = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (G.removed.count(i)) continue;
    const std::string &op = graph.node(i).op_type();
    bool done = ((op == "Erf" || op == "Tanh") && fuseGelu(G, i)) || (op == "ReduceMean" && fuseLayerNorm(G, i)) ||
                (op == "Pad" && fusePad(G, i));
    if (done) {
      ++fused;
      G.index();
    }
  }
  if (!fused) return 0;
  ::onnx::GraphProto kept;
  for (int i = 0; i < graph.node_size(); ++i)
    if (!G.removed.count(i)) *kept.add_node() = graph.node(i);
  graph.mutable_node()->Swap(kept.mutable_node());
  return fused;
}

} // namespace mpc::frontend::onnx
