//===- test/unit/codegen/TestPlanChecks.h - invariants of lowered plans --===//
//
// Checks the tests apply to every lowered plan, written independently of
// plan::verifyPlan so that a bug shared by codegen and the verifier still
// shows: no two arena values live at the same time share a byte (save a
// result that takes over exactly the bytes of an operand dying at its kernel,
// for an operand the op's record lets it alias), and no instruction reads a
// parameter or state after the update that overwrites it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/OpInfo.h"
#include "plan/Plan.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>

namespace mpc::test {

/// True when instruction `i` of `d` writes `result` in place of `operand`:
/// the op lets its result alias that operand, and both have the same bytes.
inline bool runsInPlace(const plan::DeviceProgram &d, size_t i, uint32_t operand,
                        uint32_t result) {
  const plan::Instr &in = d.instrs[i];
  const ir::OpInfo *info = ir::lookupOp(in.op);
  if (in.kind != plan::InstrKind::Kernel || in.output != result || !info) return false;
  const plan::Buffer &x = d.buffers[operand], &r = d.buffers[result];
  if (x.offset != r.offset || x.bytes != r.bytes) return false;
  for (int k : info->inPlaceOperands)
    if (size_t(k) < in.inputs.size() && in.inputs[size_t(k)] == operand) return true;
  return false;
}

/// The test's own check, independent of the verifier: recompute when each
/// arena buffer is live from the instruction list and compare every pair.
inline void expectNoLiveOverlap(const plan::Plan &p) {
  for (const plan::DeviceProgram &d : p.devices) {
    std::map<uint32_t, std::pair<size_t, size_t>> live;
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      std::vector<uint32_t> touched = d.instrs[i].inputs;
      if (d.instrs[i].kind != plan::InstrKind::Send) touched.push_back(d.instrs[i].output);
      for (uint32_t b : touched) {
        if (d.buffers[b].region != plan::Region::Arena) continue;
        auto [it, fresh] = live.emplace(b, std::make_pair(i, i));
        if (!fresh) it->second.second = i;
      }
    }
    for (auto x = live.begin(); x != live.end(); ++x)
      for (auto y = std::next(x); y != live.end(); ++y) {
        const plan::Buffer &a = d.buffers[x->first], &b = d.buffers[y->first];
        bool together = x->second.first <= y->second.second && y->second.first <= x->second.second;
        bool shared = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
        // Live ranges that meet at one instruction which runs in place.
        size_t xEnd = x->second.second, yEnd = y->second.second;
        bool inPlace = (xEnd == y->second.first && runsInPlace(d, xEnd, x->first, y->first)) ||
                       (yEnd == x->second.first && runsInPlace(d, yEnd, y->first, x->first));
        EXPECT_FALSE(together && shared && !inPlace)
            << d.device << ": " << a.name << " and " << b.name;
      }
    for (const plan::Buffer &b : d.buffers) {
      EXPECT_EQ(b.offset % 64, 0u);
      EXPECT_LE(b.offset + b.bytes, b.region == plan::Region::Arena ? d.arenaBytes : d.persistentBytes);
    }
    EXPECT_LE(d.arenaBytes, d.noReuseBytes);
  }
}


/// After an in-place update (sgd_update, adam_update) no instruction of the
/// step reads the buffers it overwrites.
inline void expectUpdatesAfterReaders(const plan::Plan &p) {
  for (const plan::DeviceProgram &d : p.devices)
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      const plan::Instr &u = d.instrs[i];
      if (u.op != "sgd_update" && u.op != "adam_update") continue;
      EXPECT_EQ(u.output, u.inputs.at(0));
      for (size_t k = 0; k < u.inputs.size(); ++k) {
        if (k == 1) continue; // the gradient is read, not written
        for (size_t j = i + 1; j < d.instrs.size(); ++j)
          for (uint32_t b : d.instrs[j].inputs)
            EXPECT_NE(b, u.inputs[k]) << d.device << ": " << d.instrs[j].node << " reads "
                                      << d.buffers[b].name << " after " << u.node;
      }
    }
}

} // namespace mpc::test
