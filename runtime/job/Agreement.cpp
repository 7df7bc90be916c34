//===- runtime/job/Agreement.cpp - every rank starts the same run ------===//
#include "runtime/job/Agreement.h"

#include "support/Error.h"

#include <cstdlib>

namespace mpc::runtime::job {

namespace {

void put(std::string &out, const std::string &s) {
  out += std::to_string(s.size()) + ":" + s;
}

std::string take(const std::string &in, size_t &pos) {
  size_t colon = in.find(':', pos);
  MPC_ASSERT(colon != std::string::npos && colon > pos, "malformed start-up record");
  size_t n = 0;
  for (size_t i = pos; i < colon; ++i) {
    MPC_ASSERT(in[i] >= '0' && in[i] <= '9', "malformed start-up record");
    n = n * 10 + size_t(in[i] - '0');
  }
  MPC_ASSERT(colon + 1 + n <= in.size(), "truncated start-up record");
  pos = colon + 1 + n;
  return in.substr(colon + 1, n);
}

std::string quoted(const std::string &v) { return v.empty() ? "(not given)" : "'" + v + "'"; }

} // namespace

std::string encodeRecord(const StartupRecord &record) {
  std::string out;
  for (const auto &[key, value] : record) {
    put(out, key);
    put(out, value);
  }
  return out;
}

StartupRecord decodeRecord(const std::string &bytes) {
  StartupRecord r;
  size_t pos = 0;
  while (pos < bytes.size()) {
    std::string key = take(bytes, pos);
    r.emplace_back(std::move(key), take(bytes, pos));
  }
  return r;
}

std::string compareRecords(const std::vector<StartupRecord> &byRank) {
  const std::string tail = "; every rank of a job must load the same plan file and get the same "
                           "flags";
  for (size_t r = 1; r < byRank.size(); ++r) {
    const StartupRecord &a = byRank[0], &b = byRank[r];
    for (size_t i = 0; i < a.size() || i < b.size(); ++i) {
      if (i < a.size() && i < b.size() && a[i] == b[i]) continue;
      if (i >= a.size() || i >= b.size() || a[i].first != b[i].first)
        return "rank " + std::to_string(r) + " was started by another version of mpc than "
               "rank 0 (their start-up records differ in form)" + tail;
      return "rank " + std::to_string(r) + " disagrees with rank 0 on " + a[i].first + ": " +
             quoted(b[i].second) + " (rank 0: " + quoted(a[i].second) + ")" + tail;
    }
  }
  return "";
}

void checkAgreement(ProcessGroup &group, const StartupRecord &mine) {
  std::vector<std::string> all = group.allGather(encodeRecord(mine));
  std::vector<StartupRecord> byRank;
  for (const std::string &bytes : all) byRank.push_back(decodeRecord(bytes));
  std::string diff = compareRecords(byRank);
  if (!diff.empty()) throw AgreedError("", "", diff);
}

} // namespace mpc::runtime::job
