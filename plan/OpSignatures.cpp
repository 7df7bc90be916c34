//===- plan/OpSignatures.cpp - kernels against the op schemas ----===//
#include "plan/OpSignatures.h"

#include "plan/PlanIO.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>

namespace mpc::plan {

namespace {
using K = AttrKind;

const char *kindName(AttrKind k) {
  switch (k) {
  case K::Bool: return "a bool";
  case K::Int: return "an integer";
  case K::Float: return "a number";
  case K::String: return "a string";
  case K::Ints: return "a list of integers";
  }
  return "?";
}

bool hasKind(const AttrValue &v, AttrKind k) {
  switch (k) {
  case K::Bool: return std::holds_alternative<bool>(v);
  case K::Int: return std::holds_alternative<int64_t>(v);
  // An integral real may be written as an integer; kernels accept both.
  case K::Float: return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
  case K::String: return std::holds_alternative<std::string>(v);
  case K::Ints: return std::holds_alternative<std::vector<int64_t>>(v);
  }
  return false;
}

/// "takes 2 to 3 operands": an operand count range, for messages.
std::string takes(uint32_t lo, uint32_t hi) {
  return "takes " + std::to_string(lo) + (hi != lo ? " to " + std::to_string(hi) : "") +
         " operands";
}

/// "transpose_a: bool, transpose_b: bool": declared attributes, for messages.
std::string attrList(const std::vector<std::pair<std::string, AttrKind>> &attrs) {
  std::string out;
  for (const auto &[name, kind] : attrs)
    out += (out.empty() ? "" : ", ") + name + ": " + attrKindName(kind);
  return out.empty() ? "none" : out;
}

/// The instruction's attributes as the shape rule reads them: integers
/// given for float attributes become reals.
AttrMap ruleAttrs(const Instr &in, const ops::OpSchema &op) {
  AttrMap attrs = in.attrs;
  for (const ops::AttrSpec &a : op.attrs)
    if (a.type == K::Float)
      if (const int64_t *v = std::get_if<int64_t>(&attrs.at(a.name))) attrs[a.name] = double(*v);
  return attrs;
}
} // namespace

const char *attrKindName(AttrKind k) {
  switch (k) {
  case K::Bool: return "bool";
  case K::Int: return "int";
  case K::Float: return "float";
  case K::String: return "string";
  case K::Ints: return "ints";
  }
  return "?";
}

OpSignature signatureOf(const ops::OpSchema &op) {
  OpSignature s;
  s.name = op.name;
  s.minInputs = uint32_t(op.minArity);
  s.maxInputs = uint32_t(op.maxArity());
  for (const ops::AttrSpec &a : op.attrs) s.attrs.emplace_back(a.name, a.type);
  return s;
}

std::optional<std::string> checkSignature(const OpSignature &sig) {
  const ops::OpSchema *op = ops::lookupSchema(sig.name);
  if (!op) return "op '" + sig.name + "' is not an op of this build of mpc";
  OpSignature want = signatureOf(*op);
  std::string other = " (the plan was written by another version of mpc)";
  if (sig.minInputs != want.minInputs || sig.maxInputs != want.maxInputs)
    return "op '" + sig.name + "' " + takes(sig.minInputs, sig.maxInputs) +
           " in the plan's op table, but " + takes(want.minInputs, want.maxInputs) +
           " in this build" + other;
  if (sig.attrs != want.attrs)
    return "op '" + sig.name + "' has attributes (" + attrList(sig.attrs) +
           ") in the plan's op table, but (" + attrList(want.attrs) + ") in this build" + other;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> checkKernel(const Instr &in,
                                                             const ops::OpSchema &op,
                                                             const DeviceProgram &device) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!op.acceptsArity(int(std::min<size_t>(in.inputs.size(), size_t(1) << 20)))) {
    out.emplace_back("/inputs", "'" + in.op + "' takes " + op.arityText() + " operands, got " +
                                    std::to_string(in.inputs.size()));
    return out;
  }
  bool attrsOk = true;
  for (const ops::AttrSpec &a : op.attrs) {
    auto it = in.attrs.find(a.name);
    if (it == in.attrs.end()) {
      out.emplace_back("/attrs", "'" + in.op + "' without its attribute '" + a.name + "' (" +
                                     kindName(a.type) + ")");
      attrsOk = false;
    } else if (!hasKind(it->second, a.type)) {
      out.emplace_back("/attrs/" + a.name, "attribute '" + a.name + "' of '" + in.op +
                                               "' must be " + kindName(a.type));
      attrsOk = false;
    }
  }
  for (const auto &[name, value] : in.attrs)
    if (!op.findAttr(name))
      out.emplace_back("/attrs/" + name, "'" + in.op + "' has no attribute '" + name + "'");
  if (!attrsOk) return out;

  // The shape rule over the buffers' types: the result buffer must have the
  // type the op gives, so no backend needs to check shapes or dtypes.
  std::vector<ops::TensorType> operands;
  operands.reserve(in.inputs.size());
  for (uint32_t id : in.inputs)
    operands.push_back({device.buffers[id].dtype, device.buffers[id].shape});
  const Buffer &result = device.buffers[in.output];
  try {
    ops::TensorType want = op.resultType(operands, ruleAttrs(in, op));
    if (want.dtype != result.dtype || want.shape != result.shape)
      out.emplace_back("/output", "'" + in.op + "' gives " + want.str() +
                                      ", but its result buffer '" + result.name + "' is " +
                                      typeText(result.dtype, result.shape));
  } catch (const RuleError &e) {
    out.emplace_back("/inputs", e.what());
  }
  return out;
}

} // namespace mpc::plan
