//===- codegen/InPlace.cpp - results that take over a dying operand's bytes -===//
//
// An elementwise kernel may write its result into the arena bytes of an
// operand that dies at that very instruction (ir::OpInfo::inPlaceOperands
// lists the operands each op allows; the alias tests prove every backend's
// kernel safe). The pair then needs one slot instead of two, which is what
// shrinks the arena of a chain such as matmul -> add -> tanh to one slot.
//
// Instruction i may run in place on operand k, buffer x, when
//   1. op(i) lists k in inPlaceOperands;
//   2. x and the result r are both arena buffers with the same dtype, shape
//      and bytes (so a broadcast operand never qualifies);
//   3. x's live range ends at i (i is its last use) and r's begins at i;
//   4. no send reads x. Every transport copies a send's bytes out at issue
//      (docs/plan-format.md), so this is a margin rather than a need: an
//      in-place write rewrites x's bytes at once, where ordinary reuse
//      rewrites them only when another buffer is placed there. A received
//      x is fine: a receive completes (or is ordered on the device's
//      stream) before the next instruction, as the liveness of every arena
//      buffer assumes.
// Pairs chain (x -> tanh -> relu reuse one slot); the memory planner places
// each chain as one rectangle from the first definition to the last use.
// One pass over the instructions, linear in their operands.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerSteps.h"

#include "ir/OpInfo.h"

#include <algorithm>

namespace mpc::codegen {

std::vector<uint32_t> findInPlaceReuse(const plan::DeviceProgram &program,
                                       const std::vector<LiveInterval> &live) {
  size_t nb = program.buffers.size();
  std::vector<uint32_t> takes(nb);
  for (uint32_t id = 0; id < nb; ++id) takes[id] = id;
  constexpr size_t kNone = ~size_t(0);
  std::vector<size_t> begin(nb, kNone), end(nb, kNone);
  for (const LiveInterval &l : live) {
    begin[l.buffer] = l.begin;
    end[l.buffer] = l.end;
  }
  std::vector<bool> sent(nb, false);
  for (const plan::Instr &in : program.instrs)
    if (in.kind == plan::InstrKind::Send)
      for (uint32_t id : in.inputs) sent[id] = true;
  auto isArena = [&](uint32_t id) {
    return program.buffers[id].region == plan::Region::Arena && begin[id] != kNone;
  };
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    const plan::Instr &in = program.instrs[i];
    if (in.kind != plan::InstrKind::Kernel) continue;
    const ir::OpInfo *info = ir::lookupOp(in.op);
    if (!info || info->inPlaceOperands.empty()) continue;
    uint32_t r = in.output;
    if (!isArena(r) || begin[r] != i) continue;
    const plan::Buffer &rb = program.buffers[r];
    for (int k : info->inPlaceOperands) {
      if (size_t(k) >= in.inputs.size()) continue;
      uint32_t x = in.inputs[size_t(k)];
      if (x == r || !isArena(x) || end[x] != i || sent[x]) continue;
      const plan::Buffer &xb = program.buffers[x];
      if (xb.dtype != rb.dtype || xb.shape != rb.shape || xb.bytes != rb.bytes) continue;
      takes[r] = takes[x];
      break;
    }
  }
  return takes;
}

} // namespace mpc::codegen
