//===- codegen/Liveness.cpp - live ranges of arena buffers ---------------===//
//
// In a straight-line program a buffer is live from the instruction that
// defines it (a kernel's output or a receive) to the last instruction that
// reads it (a kernel operand or a send). Both ends are inclusive: an
// instruction's output must not share bytes with its own operands, and a
// send reads its buffer during the send instruction itself (the runtime
// copies it into the channel before the next instruction runs). A buffer
// nothing reads is live at its definition only.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerSteps.h"

#include "support/Error.h"

namespace mpc::codegen {

std::vector<LiveInterval> computeLiveness(const plan::DeviceProgram &program) {
  constexpr size_t kNone = ~size_t(0);
  size_t nb = program.buffers.size();
  std::vector<size_t> begin(nb, kNone), end(nb, 0);
  auto touch = [&](uint32_t id, size_t i) {
    MPC_ASSERT(id < nb, "instruction names a buffer that does not exist");
    if (begin[id] == kNone) begin[id] = i;
    end[id] = i;
  };
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    const plan::Instr &in = program.instrs[i];
    for (uint32_t id : in.inputs) {
      MPC_ASSERT(id < nb && (program.buffers[id].region != plan::Region::Arena || begin[id] != kNone),
                 "instruction " + std::to_string(i) + " of " + program.device +
                     " reads an arena buffer before it is defined");
      touch(id, i);
    }
    if (in.kind != plan::InstrKind::Send) touch(in.output, i);
  }
  std::vector<LiveInterval> out;
  for (uint32_t id = 0; id < nb; ++id)
    if (program.buffers[id].region == plan::Region::Arena && begin[id] != kNone)
      out.push_back({id, begin[id], end[id]});
  return out;
}

} // namespace mpc::codegen
