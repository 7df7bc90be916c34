//===- tools/mpc/ListCommand.cpp - `mpc ops` and `mpc passes` -----------===//
//
// Lists the op table and the pass registry, as text or as Markdown
// (--markdown). docs/passes.md's pass table and docs/ops.md's op index are
// checked against this output by a test, so the docs cannot drift.
//
//===----------------------------------------------------------------------===//
#include "ir/OpInfo.h"
#include "passes/PassRegistry.h"
#include "tools/mpc/Commands.h"

#include <algorithm>
#include <iostream>
#include <memory>

namespace mpc::tool {

namespace {
/// "a, b, c?": optional operands marked "?"; a variadic op lists its
/// required operands and then "...": concat's "x0, ...".
std::string operandList(const ir::OpInfo &op) {
  std::string s;
  size_t shown = op.variadic ? std::max(size_t(op.minArity), op.operands.size() - 1)
                             : op.operands.size();
  for (size_t i = 0; i < shown; ++i) {
    s += (i ? ", " : "") + op.operandName(i);
    if (int(i) >= op.minArity) s += "?";
  }
  if (op.variadic) s += shown ? ", ..." : "...";
  return s;
}

std::string attrList(const ir::OpInfo &op) {
  std::string s;
  for (const ir::AttrSpec &a : op.attrs) {
    s += (s.empty() ? "" : ", ") + a.name + ": " + ir::attrTypeName(a.type);
    s += a.defaultValue ? " = " + ir::attrValueStr(*a.defaultValue) : " (required)";
  }
  return s;
}

void printOps(bool markdown) {
  if (markdown) {
    std::cout << "| op | family | operands | attributes | float types | differentiable | doc |\n"
              << "|---|---|---|---|---|---|---|\n";
    for (const ir::OpInfo &op : ir::allOps())
      std::cout << "| `" << op.name << "` | " << op.family << " | " << operandList(op) << " | "
                << attrList(op) << " | " << ops::precisionText(op.precision) << " | "
                << (op.grad ? "yes" : "no") << " | " << op.doc << " |\n";
    return;
  }
  for (const ir::OpInfo &op : ir::allOps()) {
    std::cout << op.name << "(" << operandList(op) << ")";
    if (!op.attrs.empty()) std::cout << " {" << attrList(op) << "}";
    std::cout << "\n    " << op.doc << "\n    float types: " << ops::precisionText(op.precision)
              << "\n";
  }
}

void printPasses(bool markdown) {
  if (markdown) std::cout << "| pass | summary |\n|---|---|\n";
  for (const passes::PassEntry &e : passes::allPasses()) {
    if (e.testOnly) continue;
    if (markdown) std::cout << "| `" << e.name << "` | " << e.summary << " |\n";
    else std::cout << e.name << "\n    " << e.summary << "\n";
  }
}
} // namespace

void addListCommands(CLI::App &app) {
  auto opsMd = std::make_shared<bool>(false);
  CLI::App *ops = app.add_subcommand("ops", "List the ops mpc knows, with operands and attributes");
  ops->add_flag("--markdown", *opsMd, "Print a Markdown table");
  ops->callback([opsMd] { printOps(*opsMd); });

  auto passesMd = std::make_shared<bool>(false);
  CLI::App *ps = app.add_subcommand("passes", "List the passes usable in --passes");
  ps->add_flag("--markdown", *passesMd, "Print a Markdown table");
  ps->callback([passesMd] { printPasses(*passesMd); });
}

} // namespace mpc::tool
