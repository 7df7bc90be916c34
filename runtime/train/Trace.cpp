//===- runtime/train/Trace.cpp - a run as Chrome trace-event JSON ---------===//
#include "runtime/train/Trace.h"

#include "runtime/job/Gather.h"

#include <cstring>
#include <limits>

namespace mpc::runtime::train {


void Trace::alignClocks(job::ProcessGroup &group) {
  if (group.size() <= 1) return;
  constexpr int kRounds = 8;
  if (group.rank() == 0) {
    for (int r = 1; r < group.size(); ++r) {
      int64_t best = std::numeric_limits<int64_t>::max(), offset = 0;
      for (int k = 0; k < kRounds; ++k) {
        int64_t t0 = traceClockNs(), theirs = 0;
        group.sendBytes(r, &t0, sizeof t0);
        group.recvBytes(r, &theirs, sizeof theirs);
        int64_t t1 = traceClockNs();
        if (t1 - t0 < best) {
          best = t1 - t0;
          offset = theirs - (t0 + (t1 - t0) / 2);
        }
      }
      group.sendBytes(r, &offset, sizeof offset);
    }
    return;
  }
  for (int k = 0; k < kRounds; ++k) {
    int64_t ping = 0;
    group.recvBytes(0, &ping, sizeof ping);
    int64_t now = traceClockNs();
    group.sendBytes(0, &now, sizeof now);
  }
  group.recvBytes(0, &offsetNs_, sizeof offsetNs_);
}

void Trace::add(int64_t step, uint32_t device, const std::vector<InstrSpan> &spans) {
  for (const InstrSpan &s : spans)
    spans_.push_back({step, device, s.instr, s.begin - offsetNs_, s.end - offsetNs_});
}

void Trace::gather(job::ProcessGroup &group) {
  for (int owner = 1; owner < group.size(); ++owner) {
    std::vector<uint8_t> bytes;
    if (group.rank() == owner) {
      bytes.resize(spans_.size() * sizeof(plan::TraceSpan));
      if (!spans_.empty()) std::memcpy(bytes.data(), spans_.data(), bytes.size());
    }
    job::moveToRoot(group, owner, bytes);
    if (group.rank() != 0) continue;
    std::vector<plan::TraceSpan> theirs(bytes.size() / sizeof(plan::TraceSpan));
    if (!theirs.empty()) std::memcpy(theirs.data(), bytes.data(), theirs.size() * sizeof(plan::TraceSpan));
    spans_.insert(spans_.end(), theirs.begin(), theirs.end());
  }
}

std::string Trace::json() const {
  return plan::traceEventJson(plan_, spans_, "measured");
}

} // namespace mpc::runtime::train
