//===- ops/Layout.cpp - layouts and the shared sharding rules -------------===//
#include "ops/Layout.h"

#include "support/Error.h"

#include <algorithm>

namespace mpc::ops {

std::string Layout::str() const {
  switch (kind) {
  case Replicated: return "R";
  case Split: return "S(" + std::to_string(axis) + ")";
  case Partial: return "P";
  }
  return "?";
}

bool parseLayout(const std::string &text, Layout &out) {
  if (text == "R") return out = Layout::r(), true;
  if (text == "P") return out = Layout::p(), true;
  if (text.size() >= 4 && text.compare(0, 2, "S(") == 0 && text.back() == ')') {
    std::string digits = text.substr(2, text.size() - 3);
    if (digits.empty() || digits.size() > 2 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    out = Layout::s(std::stoi(digits));
    return out.axis < int(kMaxRank);
  }
  return false;
}

TensorType localType(const TensorType &t, const Layout &l, int64_t parts) {
  if (!l.split()) return t;
  if (l.axis < 0 || size_t(l.axis) >= t.shape.size())
    throw RuleError("layout " + l.str() + " names no axis of " + t.str());
  int64_t n = t.shape[size_t(l.axis)];
  if (parts < 1 || n % parts != 0)
    throw RuleError("axis " + std::to_string(l.axis) + " of " + t.str() + " (size " +
                    std::to_string(n) + ") does not split into " + std::to_string(parts) +
                    " equal parts");
  TensorType out = t;
  out.shape[size_t(l.axis)] = n / parts;
  return out;
}

ShardResult replicatedRule(const ShardQuery &q, std::string why) {
  ShardResult r;
  r.operands.assign(q.operands.size(), Layout::r());
  r.result = Layout::r();
  if (why.empty())
    for (const Layout &l : q.layouts)
      if (!l.replicated()) why = "it takes replicated operands only";
  r.why = std::move(why);
  return r;
}

namespace {

/// The result axis that operand axis `a` of a rank-`rank` operand meets
/// under NumPy broadcasting against a result of rank `resultRank`.
int alignedAxis(int a, size_t rank, size_t resultRank) {
  return a + int(resultRank) - int(rank);
}

/// Operand i's axis that meets result axis `ra`, or -1 where it broadcasts
/// (absent, or of size 1 against a larger result axis).
int operandAxis(const ShardQuery &q, size_t i, int ra) {
  const Shape &s = q.operands[i].shape;
  int a = ra - (int(q.result.shape.size()) - int(s.size()));
  if (a < 0) return -1;
  if (s[size_t(a)] != q.result.shape[size_t(ra)]) return -1;
  return a;
}

/// Splits every operand along result axis `ra` (R where it broadcasts).
ShardResult splitAlong(const ShardQuery &q, int ra) {
  ShardResult r;
  for (size_t i = 0; i < q.operands.size(); ++i) {
    int a = operandAxis(q, i, ra);
    r.operands.push_back(a < 0 ? Layout::r() : Layout::s(a));
  }
  r.result = Layout::s(ra);
  return r;
}

/// The first result axis an operand is split along (not broadcasting), or -1.
int firstSplitAxis(const ShardQuery &q, std::span<const int64_t> wholeAxes) {
  for (size_t i = 0; i < q.operands.size(); ++i) {
    const Layout &l = q.layouts[i];
    if (!l.split() || size_t(l.axis) >= q.operands[i].shape.size()) continue;
    int ra = alignedAxis(l.axis, q.operands[i].shape.size(), q.result.shape.size());
    if (operandAxis(q, i, ra) != l.axis) continue; // it broadcasts there
    if (std::find(wholeAxes.begin(), wholeAxes.end(), int64_t(ra)) != wholeAxes.end()) continue;
    return ra;
  }
  return -1;
}

} // namespace

ShardResult elementwiseRule(const ShardQuery &q, Linearity linearity) {
  if (int ra = firstSplitAxis(q, {}); ra >= 0) return splitAlong(q, ra);
  size_t partial = 0;
  for (const Layout &l : q.layouts) partial += l.partial();
  if (partial == 0) return replicatedRule(q);
  ShardResult r;
  r.result = Layout::p();
  switch (linearity) {
  case Linearity::None: break;
  case Linearity::Sum:
    // Each operand must be a partial sum of the whole shape: a broadcast
    // operand would be added t times.
    if (partial == q.layouts.size()) {
      bool whole = true;
      for (const TensorType &t : q.operands) whole &= t.shape == q.result.shape;
      if (whole) {
        r.operands.assign(q.operands.size(), Layout::p());
        return r;
      }
    }
    break;
  case Linearity::Product:
  case Linearity::First:
    if (partial == 1 && (linearity == Linearity::Product || q.layouts[0].partial()) &&
        q.operands[0].shape == q.result.shape) {
      for (const Layout &l : q.layouts) r.operands.push_back(l.partial() ? Layout::p() : Layout::r());
      return r;
    }
    break;
  }
  return replicatedRule(q, "it is not linear in a partial sum");
}

ShardResult rowwiseRule(const ShardQuery &q, std::span<const int64_t> wholeAxes, const char *op) {
  if (int ra = firstSplitAxis(q, wholeAxes); ra >= 0) return splitAlong(q, ra);
  std::string why;
  for (size_t i = 0; i < q.operands.size() && why.empty(); ++i)
    if (q.layouts[i].split()) {
      int ra = alignedAxis(q.layouts[i].axis, q.operands[i].shape.size(), q.result.shape.size());
      why = std::string(op) + " normalises along axis " + std::to_string(ra) +
            " of its result, which must not be split";
    }
  return replicatedRule(q, why);
}

ShardResult updateRule(const ShardQuery &q) {
  ShardResult r;
  Layout param = q.layouts[0].partial() ? Layout::r() : q.layouts[0];
  for (const TensorType &t : q.operands)
    r.operands.push_back(t.shape == q.operands[0].shape ? param : Layout::r());
  r.result = param;
  r.why = q.layouts[0].partial()
              ? "a parameter cannot be a partial sum"
              : "an update reads its gradient and state in its parameter's layout (" +
                    param.str() + "): anything else would let the parameter's copies diverge";
  return r;
}

} // namespace mpc::ops
