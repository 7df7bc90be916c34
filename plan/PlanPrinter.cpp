//===- plan/PlanPrinter.cpp - `mpc dump`: a plan, readably -------===//
//
// The text form of a plan: a header (model, seed, devices, optimizer), the
// user-visible tensors (inputs, params, states, outputs, loss), then each
// device's program, one line per instruction, and its buffer table:
//
//   device cpu:1 (arena 1.2 KiB, persistent 64 B)
//     0: recv %z0.to.cpu1 <- cpu:0 #ch0
//     1: %h1 = matmul(%z0.to.cpu1 @b4, %w1 @b2) {transpose_a=false, ...} : f32[100,2] @b5
//     4: send %z1 -> cpu:2 #ch1
//
// The output depends only on the plan, so lit tests can check it.
//
//===----------------------------------------------------------------------===//
#include "plan/PlanIO.h"
#include "support/StringUtil.h"

#include <cstdio>

namespace mpc::plan {

std::string typeText(DType t, const std::vector<int64_t> &shape) {
  return dtypeName(t) + shapeText(shape);
}

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string attrText(const AttrValue &v) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return number(d); }
    std::string operator()(const std::string &s) const { return "\"" + s + "\""; }
    std::string operator()(const std::vector<int64_t> &xs) const {
      std::string s = "[";
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
      return s + "]";
    }
  };
  return std::visit(Visitor{}, v);
}

std::string deviceName(const Plan &plan, uint32_t index) {
  return index < plan.devices.size() ? plan.devices[index].device : "device#" + std::to_string(index);
}

/// "%name" of a buffer id, tolerant of bad ids (printing never throws).
std::string valueName(const DeviceProgram &d, uint32_t id) {
  return id < d.buffers.size() ? "%" + d.buffers[id].name : "%<bad buffer " + std::to_string(id) + ">";
}

void printRef(const Plan &plan, const char *what, const TensorRef &r, std::ostream &os) {
  os << what << " %" << r.name << " : " << typeText(r.dtype, r.shape);
  if (!r.shards.empty()) {
    if (r.shardAxis >= 0) os << " split along " << r.shardAxis;
    for (size_t i = 0; i < r.shards.size(); ++i)
      os << (i ? ", " : " sharded @") << deviceName(plan, r.shards[i].device) << " b"
         << r.shards[i].buffer;
    os << "\n";
    return;
  }
  os << " @" << deviceName(plan, r.device) << " b" << r.buffer;
  for (size_t i = 0; i < r.mirrors.size(); ++i)
    os << (i ? ", " : " mirrored @") << deviceName(plan, r.mirrors[i].device) << " b"
       << r.mirrors[i].buffer;
  os << "\n";
}

void printInstr(const Plan &plan, const DeviceProgram &d, size_t i, const Instr &in, std::ostream &os) {
  os << "  " << i << ": ";
  switch (in.kind) {
  case InstrKind::Kernel: {
    os << valueName(d, in.output) << " = " << in.op << "(";
    for (size_t k = 0; k < in.inputs.size(); ++k)
      os << (k ? ", " : "") << valueName(d, in.inputs[k]) << " @b" << in.inputs[k];
    os << ")";
    if (!in.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto &[name, v] : in.attrs) {
        os << (first ? "" : ", ") << name << "=" << attrText(v);
        first = false;
      }
      os << "}";
    }
    if (in.output < d.buffers.size()) {
      const Buffer &b = d.buffers[in.output];
      os << " : " << typeText(b.dtype, b.shape);
    }
    os << " @b" << in.output << "\n";
    break;
  }
  case InstrKind::Send:
    os << "send " << (in.inputs.empty() ? "%<none>" : valueName(d, in.inputs[0])) << " -> "
       << deviceName(plan, in.peer) << " #ch" << in.channel << "\n";
    break;
  case InstrKind::Recv:
    os << "recv " << valueName(d, in.output) << " <- " << deviceName(plan, in.peer) << " #ch"
       << in.channel << "\n";
    break;
  case InstrKind::Collective: {
    // %g.sum = all_reduce(%g @b3) over [cpu:0, cpu:1] : f32[4,2] @b5 #ch4
    os << valueName(d, in.output) << " = " << in.op << "("
       << (in.inputs.empty() ? "%<none>" : valueName(d, in.inputs[0]) + " @b" +
                                               std::to_string(in.inputs[0]))
       << ") over [";
    for (size_t k = 0; k < in.group.size(); ++k)
      os << (k ? ", " : "") << deviceName(plan, in.group[k]);
    os << "]";
    if (in.output < d.buffers.size()) {
      const Buffer &b = d.buffers[in.output];
      os << " : " << typeText(b.dtype, b.shape);
    }
    os << " @b" << in.output << " #ch" << in.channel << "\n";
    break;
  }
  }
}

} // namespace

void printPlan(const Plan &plan, std::ostream &os) {
  os << "plan " << plan.model << " (seed " << plan.seed << ", model checksum "
     << hex64(plan.modelChecksum) << ")\n";
  os << "devices:";
  for (const DeviceProgram &d : plan.devices) os << " " << d.device;
  os << "\n";
  os << "optimizer: " << (plan.optimizer.kind.empty() ? "none" : plan.optimizer.kind);
  if (!plan.optimizer.hyper.empty()) {
    os << " {";
    bool first = true;
    for (const auto &[k, v] : plan.optimizer.hyper) {
      os << (first ? "" : ", ") << k << "=" << number(v);
      first = false;
    }
    os << "}";
  }
  os << "\n";
  for (const TensorRef &r : plan.inputs) printRef(plan, "input", r, os);
  for (const TensorRef &r : plan.params) printRef(plan, "param", r, os);
  for (const TensorRef &r : plan.states) printRef(plan, "state", r, os);
  for (const TensorRef &r : plan.outputs) printRef(plan, "output", r, os);
  if (plan.hasLoss) printRef(plan, "loss", plan.loss, os);

  for (const DeviceProgram &d : plan.devices) {
    os << "\ndevice " << d.device << " (arena " << byteSizeText(d.arenaBytes) << ", persistent "
       << byteSizeText(d.persistentBytes) << ")\n";
    for (size_t i = 0; i < d.instrs.size(); ++i) printInstr(plan, d, i, d.instrs[i], os);
    os << "  buffers:\n";
    for (const Buffer &b : d.buffers)
      os << "    b" << b.id << " %" << b.name << " : " << typeText(b.dtype, b.shape) << " "
         << (b.region == Region::Arena ? "arena" : "persistent") << " +" << b.offset << " ("
         << byteSizeText(b.bytes) << ")\n";
  }
}

} // namespace mpc::plan
