//===- plan/OpSignatures.cpp - kernels against the plan's op table ===//
#include "plan/OpSignatures.h"

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

const OpSignature *findOpSignature(const Plan &plan, const std::string &op) {
  auto it = std::lower_bound(plan.ops.begin(), plan.ops.end(), op,
                             [](const OpSignature &s, const std::string &n) { return s.name < n; });
  return it != plan.ops.end() && it->name == op ? &*it : nullptr;
}

std::vector<std::pair<std::string, std::string>> checkKernel(const Instr &in,
                                                             const OpSignature &signature,
                                                             const DeviceProgram &device) {
  std::vector<std::pair<std::string, std::string>> out;
  const OpSignature *sig = &signature;
  uint32_t n = uint32_t(in.inputs.size());
  if (n < sig->minInputs || n > sig->maxInputs) {
    out.emplace_back("/inputs", "'" + in.op + "' takes " + std::to_string(sig->minInputs) +
                                    (sig->maxInputs != sig->minInputs
                                         ? " to " + std::to_string(sig->maxInputs)
                                         : std::string()) +
                                    " operands, got " + std::to_string(n));
    return out;
  }
  bool attrsOk = true;
  for (const auto &[name, kind] : sig->attrs) {
    auto it = in.attrs.find(name);
    if (it == in.attrs.end()) {
      out.emplace_back("/attrs", "'" + in.op + "' without its attribute '" + name + "' (" +
                                     kindName(kind) + ")");
      attrsOk = false;
    } else if (!hasKind(it->second, kind)) {
      out.emplace_back(std::string("/attrs/") + name,
                       std::string("attribute '") + name + "' of '" + in.op + "' must be " + kindName(kind));
      attrsOk = false;
    }
  }
  for (const auto &[name, value] : in.attrs) {
    bool declared = std::any_of(sig->attrs.begin(), sig->attrs.end(),
                                [&](const auto &a) { return name == a.first; });
    if (!declared) out.emplace_back("/attrs/" + name, "'" + in.op + "' has no attribute '" + name + "'");
  }
  if (!attrsOk) return out;

  // Shape rules of the ops whose attributes state a shape, so the
  // attributes and the buffers cannot disagree.
  const Buffer &result = device.buffers[in.output];
  auto ints = [&](const char *name) { return std::get<std::vector<int64_t>>(in.attrs.at(name)); };
  if (in.op == "fill" || in.op == "broadcast_to") {
    if (ints("shape") != result.shape)
      out.emplace_back("/attrs/shape", "'" + in.op + "' shape " + shapeText(ints("shape")) +
                                           " differs from its result buffer's " +
                                           shapeText(result.shape));
  } else if (in.op == "reshape") {
    const Buffer &x = device.buffers[in.inputs[0]];
    std::vector<int64_t> shape = ints("shape");
    bool ok = shape.size() == result.shape.size();
    for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] == -1 || shape[i] == result.shape[i];
    if (!ok)
      out.emplace_back("/attrs/shape", "'reshape' shape " + shapeText(shape) +
                                           " differs from its result buffer's " +
                                           shapeText(result.shape));
    else if (x.numElements() != result.numElements() || x.dtype != result.dtype)
      out.emplace_back("/output", "'reshape' of " + shapeText(x.shape) + " into " +
                                      shapeText(result.shape) +
                                      " changes the element count or type");
  } else if (in.op == "conv2d_grad_input" || in.op == "avg_pool2d_grad" ||
             in.op == "conv2d_grad_weight") {
    // The backward ops of the window ops state the spatial size of their
    // result (the forward input's, or the forward kernel's); the rest of the
    // window geometry is checked when the kernels load (runtime/Windows.cpp).
    const char *attr = in.op == "conv2d_grad_weight" ? "kernel_size" : "input_size";
    std::vector<int64_t> size = ints(attr);
    if (result.shape.size() != 4 ||
        size != std::vector<int64_t>{result.shape[2], result.shape[3]})
      out.emplace_back(std::string("/attrs/") + attr,
                       "'" + in.op + "' " + attr + " " + shapeText(size) +
                           " differs from the last two axes of its result buffer's " +
                           shapeText(result.shape));
  } else if (in.op == "matmul") {
    // Rank >= 2: the last two axes are the matrices (swapped by the
    // transposes), the leading ones a batch broadcast as numpy.matmul does.
    const Buffer &a = device.buffers[in.inputs[0]], &b = device.buffers[in.inputs[1]];
    const size_t ra = a.shape.size(), rb = b.shape.size();
    if (ra < 2 || rb < 2 || result.shape.size() < 2) {
      out.emplace_back("/inputs", "'matmul' needs operands and result of rank >= 2, got " +
                                      shapeText(a.shape) + " x " + shapeText(b.shape) + " -> " +
                                      shapeText(result.shape));
    } else {
      bool ta = std::get<bool>(in.attrs.at("transpose_a"));
      bool tb = std::get<bool>(in.attrs.at("transpose_b"));
      int64_t m = a.shape[ra - (ta ? 1 : 2)], k = a.shape[ra - (ta ? 2 : 1)];
      int64_t k2 = b.shape[rb - (tb ? 1 : 2)], nn = b.shape[rb - (tb ? 2 : 1)];
      // The broadcast batch: right-aligned, each axis equal or 1 on a side.
      size_t rank = std::max(ra, rb) - 2;
      std::vector<int64_t> want(rank, 1);
      bool batchOk = true;
      for (size_t i = 0; i < rank; ++i) {
        int64_t da = i + ra - 2 >= rank ? a.shape[i + ra - 2 - rank] : 1;
        int64_t db = i + rb - 2 >= rank ? b.shape[i + rb - 2 - rank] : 1;
        batchOk = batchOk && (da == db || da == 1 || db == 1);
        want[i] = da == 1 ? db : da;
      }
      want.push_back(m);
      want.push_back(nn);
      if (!batchOk || k != k2 || result.shape != want)
        out.emplace_back("/output", "'matmul' of " + shapeText(a.shape) + (ta ? "^T" : "") + " x " +
                                        shapeText(b.shape) + (tb ? "^T" : "") + " cannot give " +
                                        shapeText(result.shape));
      if (in.inputs.size() == 3 && device.buffers[in.inputs[2]].shape != result.shape)
        out.emplace_back("/inputs/2", "'matmul' accumulator " +
                                          shapeText(device.buffers[in.inputs[2]].shape) +
                                          " does not match the result " + shapeText(result.shape));
    }
  }
  return out;
}

} // namespace mpc::plan
