//===- ir/Builder.cpp - creates op nodes and runs their shape rule -------===//
#include "ir/Builder.h"

#include "support/Error.h"

namespace mpc::ir {

AttrMap completeAttrs(const OpInfo &info, AttrMap attrs) {
  for (const auto &[name, value] : attrs) {
    const AttrSpec *spec = info.findAttr(name);
    if (!spec)
      throw RuleError("unknown attribute '" + name + "' for op '" + info.name + "'");
    AttrType t = attrTypeOf(value);
    // An integer literal is accepted where a float is expected.
    if (spec->type == AttrType::Float && t == AttrType::Int) {
      attrs[name] = double(std::get<int64_t>(value));
      continue;
    }
    if (t != spec->type)
      throw RuleError("attribute '" + name + "' of op '" + info.name + "' must be " +
                      attrTypeName(spec->type) + ", got " + attrTypeName(t));
  }
  for (const AttrSpec &spec : info.attrs) {
    if (attrs.count(spec.name)) continue;
    if (!spec.defaultValue)
      throw RuleError("missing required attribute '" + spec.name + "' for op '" +
                      info.name + "'");
    attrs[spec.name] = *spec.defaultValue;
  }
  return attrs;
}

TensorType inferNodeType(const OpInfo &info, const std::vector<Node *> &inputs,
                         const AttrMap &attrs) {
  int n = int(inputs.size());
  if (!info.acceptsArity(n))
    throw RuleError("op '" + std::string(info.name) + "' takes " + info.arityText() +
                    " operand(s), got " + std::to_string(n));
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (const Node *in : inputs) types.push_back(in->type);
  return info.resultType(types, attrs);
}

Node *Builder::create(OpKind op, std::vector<Node *> inputs, AttrMap attrs,
                      const std::string &hint) {
  const OpInfo &info = opInfo(op);
  AttrMap full = completeAttrs(info, std::move(attrs));
  TensorType type = inferNodeType(info, inputs, full);
  std::string base = hint.empty() ? std::string(info.name) : hint;
  if (!namePrefix.empty()) base = namePrefix + "." + base;
  Node *n = graph_.addOp(graph_.uniqueName(base), op, std::move(inputs), std::move(full),
                         std::move(type));
  n->device = device;
  n->backward = backward;
  n->origin = origin;
  return n;
}

std::string copyName(const std::string &value, const std::string &device) {
  std::string name = value + ".to.";
  for (char c : device)
    if (c != ':') name += c;
  return name;
}

Node *Builder::copyTo(Node *a, const std::string &dest, const std::string &name) {
  // One copy per (value, destination): a gradient rule may ask twice for the
  // same transfer (add's two operands share one gradient value).
  for (Node *u : graph_.users(a))
    if (u->isOp(OpKind::Copy) && u->device == dest) return u;
  const OpInfo &info = opInfo(OpKind::Copy);
  AttrMap attrs = completeAttrs(info, {});
  TensorType type = inferNodeType(info, {a}, attrs);
  Node *n = graph_.addOp(graph_.uniqueName(name.empty() ? copyName(a->name, dest) : name), OpKind::Copy, {a}, std::move(attrs),
                         std::move(type));
  n->device = dest;
  n->backward = backward;
  n->origin = origin;
  return n;
}

Node *Builder::reduceToShape(Node *g, const Shape &target) {
  const Shape &have = g->type.shape;
  if (have == target) return g;
  MPC_ASSERT(have.size() >= target.size(), "gradient of lower rank than its operand");
  size_t lead = have.size() - target.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < have.size(); ++i)
    if (i < lead || (target[i - lead] == 1 && have[i] != 1)) axes.push_back(int64_t(i));
  Node *s = sum(g, axes, /*keepdims=*/true);
  return reshape(s, target);
}

} // namespace mpc::ir
