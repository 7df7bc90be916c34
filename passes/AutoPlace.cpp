//===- passes/AutoPlace.cpp - cost-model partitioning for auto placement ===//
//
// Invariant established: with --placement=auto, every forward op node that the
// user did not annotate gets the device of its stage; stages are contiguous
// ranges of the forward graph's topological order, stage s on devices[s], and
// the largest stage cost is minimal among all such partitions that respect
// the annotations and the per-device memory limit.
//
// Cost model (docs/passes.md): position t of the chain is the t-th forward op
// in topological order; its cost is OpInfo::flops (one FLOP per result
// element when the op declares none), its resident bytes its result plus the
// params and inputs whose first consumer it is. A stage [i, j) costs its FLOPs
// plus kTransferFlopsPerByte times the bytes of the values crossing its end
// cut (produced before j, consumed at or after j).
//
// Algorithm:
//   1. Prefix sums of FLOPs and bytes; cut bytes from a difference array over
//      each value's [home, last consumer] range.
//   2. Annotations become bounds on the stage starts: stage s must begin
//      after every op pinned to an earlier device and no later than any op
//      pinned to devices[s] or a later one.
//   3. Feasibility of a bottleneck B: a greedy sweep gives each stage the
//      farthest end whose cost is <= B and whose bytes fit (any feasible
//      partition's cuts are never ahead of the greedy ones, so the sweep
//      succeeds exactly when some partition does).
//   4. Binary search on B between 0 and the cost of one stage holding all;
//      the greedy partition at the final upper bound is optimal.
//
//===----------------------------------------------------------------------===//
#include "passes/AutoPlace.h"

#include "ir/Device.h"
#include "support/Error.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <ostream>
#include <set>

namespace mpc::passes {

using ir::Graph;
using ir::Node;

namespace {

struct Prefix {
  std::vector<double> flops, bytes; // N+1 entries
};

Prefix prefixSums(const ChainProblem &p) {
  Prefix s;
  s.flops.assign(size_t(p.size()) + 1, 0.0);
  s.bytes.assign(size_t(p.size()) + 1, 0.0);
  for (int t = 0; t < p.size(); ++t) {
    s.flops[size_t(t) + 1] = s.flops[size_t(t)] + p.flops[size_t(t)];
    s.bytes[size_t(t) + 1] = s.bytes[size_t(t)] + p.bytes[size_t(t)];
  }
  return s;
}

int minStart(const ChainProblem &p, int s) {
  return p.minStart.empty() ? 0 : p.minStart[size_t(s)];
}
int maxStart(const ChainProblem &p, int s) {
  return p.maxStart.empty() ? p.size() : p.maxStart[size_t(s)];
}

struct Sweep {
  bool ok = false;
  std::vector<int> starts;
  int blockedAt = 0;
};

/// Step 3: the greedy feasibility sweep for bottleneck `limit`.
Sweep sweep(const ChainProblem &p, const Prefix &pre, double limit) {
  int n = p.size(), k = p.stages;
  double mem = p.memoryLimit > 0 ? p.memoryLimit : std::numeric_limits<double>::infinity();
  auto cost = [&](int i, int j) {
    if (i == j) return 0.0;
    return pre.flops[size_t(j)] - pre.flops[size_t(i)] +
           (j < n ? p.transferCost * p.cutBytes[size_t(j)] : 0.0);
  };
  auto fits = [&](int i, int j) {
    return cost(i, j) <= limit && pre.bytes[size_t(j)] - pre.bytes[size_t(i)] <= mem;
  };
  Sweep out;
  out.starts.assign(size_t(k) + 1, 0);
  int i = 0;
  for (int s = 0; s < k; ++s) {
    bool last = s == k - 1;
    int lo = last ? n : std::max(i, minStart(p, s + 1));
    int hi = last ? n : std::min(n, maxStart(p, s + 1));
    // Compute and memory grow with j, so nothing beyond these bounds fits.
    int byFlops = int(std::upper_bound(pre.flops.begin() + i, pre.flops.end(),
                                       pre.flops[size_t(i)] + limit) -
                      pre.flops.begin()) - 1;
    int byBytes = int(std::upper_bound(pre.bytes.begin() + i, pre.bytes.end(),
                                       pre.bytes[size_t(i)] + mem) -
                      pre.bytes.begin()) - 1;
    int best = -1;
    for (int j = std::min({hi, byFlops, byBytes}); j >= lo; --j)
      if (fits(i, j)) {
        best = j;
        break;
      }
    if (best < 0) {
      int b = i;
      while (b < n && fits(i, b + 1)) ++b;
      out.blockedAt = b;
      return out;
    }
    out.starts[size_t(s) + 1] = best;
    i = best;
  }
  out.ok = true;
  return out;
}

} // namespace

double stageCost(const ChainProblem &p, int i, int j) {
  if (i == j) return 0.0;
  double f = 0;
  for (int t = i; t < j; ++t) f += p.flops[size_t(t)];
  return f + (j < p.size() ? p.transferCost * p.cutBytes[size_t(j)] : 0.0);
}

double stageBytes(const ChainProblem &p, int i, int j) {
  double b = 0;
  for (int t = i; t < j; ++t) b += p.bytes[size_t(t)];
  return b;
}

ChainResult partitionChain(const ChainProblem &p) {
  MPC_ASSERT(p.stages >= 1, "partitionChain needs at least one stage");
  Prefix pre = prefixSums(p);
  ChainResult result;
  Sweep any = sweep(p, pre, std::numeric_limits<double>::infinity());
  if (!any.ok) {
    result.blockedAt = any.blockedAt;
    return result;
  }
  // Step 4: binary search; `hi` is always feasible.
  double maxCut = 0;
  for (double c : p.cutBytes) maxCut = std::max(maxCut, c);
  double lo = 0, hi = pre.flops.back() + p.transferCost * maxCut;
  if (!sweep(p, pre, hi).ok) hi = std::numeric_limits<double>::max();
  for (int iter = 0; iter < 200 && hi - lo > 1e-12 * std::max(1.0, hi); ++iter) {
    double mid = lo + (hi - lo) / 2;
    if (sweep(p, pre, mid).ok) hi = mid;
    else lo = mid;
  }
  Sweep best = sweep(p, pre, hi);
  MPC_ASSERT(best.ok, "auto placement lost its feasible bottleneck");
  ChainPartition part;
  part.starts = best.starts;
  for (int s = 0; s < p.stages; ++s)
    part.bottleneck = std::max(part.bottleneck,
                               stageCost(p, part.starts[size_t(s)], part.starts[size_t(s) + 1]));
  result.partition = std::move(part);
  return result;
}

//===----------------------------------------------------------------------===//
// The graph side.
//===----------------------------------------------------------------------===//

namespace {

double nodeFlops(const Node &n) {
  std::vector<ir::TensorType> types;
  for (const Node *in : n.inputs) types.push_back(in->type);
  return n.info().flopCount(types, n.type, n.attrs);
}

std::string humanBytes(double b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", b);
  return buf;
}

} // namespace

void autoPlace(const Graph &g, const std::vector<Node *> &order, PassContext &ctx,
               std::map<const Node *, std::string> &pinned) {
  const std::string &file = g.sourceFile;
  const std::vector<std::string> &devices = ctx.options.devices;
  if (devices.empty())
    throw UserError(file, "--placement", "--placement=auto needs --devices");
  for (const auto &[n, d] : pinned)
    if (ir::parseDeviceSet(d))
      throw UserError(file, "--placement",
                      "--placement=auto places each stage on one device, and " + n->describe() +
                          " is in a group mapped to several devices (" + d +
                          "): place a tensor-parallel model by hand (--map)");
  int k = int(devices.size());

  // The chain: forward op nodes in topological order.
  std::vector<const Node *> seq;
  std::map<const Node *, int> pos;
  for (const Node *n : order)
    if (n->isOp() && !n->backward && !n->info().has(ir::kOptimizer)) {
      pos[n] = int(seq.size());
      seq.push_back(n);
    }
  int n = int(seq.size());
  if (n == 0) return;

  // Step 1: each value's home (its position, or a leaf's first consumer)
  // and last consumer.
  std::map<const Node *, int> home, last;
  for (int t = 0; t < n; ++t) {
    home[seq[size_t(t)]] = t;
    last[seq[size_t(t)]] = t;
  }
  for (int t = 0; t < n; ++t)
    for (const Node *in : seq[size_t(t)]->inputs) {
      if (in->isLeaf() && !home.count(in)) home[in] = t;
      if (home.count(in)) last[in] = std::max(last.count(in) ? last.at(in) : t, t);
    }
  ChainProblem p;
  p.stages = k;
  p.memoryLimit = double(ctx.options.deviceMemory);
  p.flops.resize(size_t(n));
  p.bytes.assign(size_t(n), 0.0);
  std::vector<double> diff(size_t(n) + 2, 0.0);
  for (int t = 0; t < n; ++t) p.flops[size_t(t)] = nodeFlops(*seq[size_t(t)]);
  for (const auto &[v, h] : home) {
    if (v->kind == ir::NodeKind::State) continue;
    double bytes = double(v->type.byteSize());
    p.bytes[size_t(h)] += bytes;
    int l = last.at(v);
    if (l > h) {
      diff[size_t(h) + 1] += bytes;
      diff[size_t(l) + 1] -= bytes;
    }
  }
  p.cutBytes.assign(size_t(n) + 1, 0.0);
  double run = 0;
  for (int c = 1; c < n; ++c) p.cutBytes[size_t(c)] = (run += diff[size_t(c)]);

  // Step 2: annotations as bounds on the stage starts.
  auto stageOf = [&](const std::string &d) {
    return int(std::find(devices.begin(), devices.end(), d) - devices.begin());
  };
  std::vector<std::pair<int, int>> pins; // (position, stage)
  for (int t = 0; t < n; ++t)
    if (auto it = pinned.find(seq[size_t(t)]); it != pinned.end()) {
      int s = stageOf(it->second);
      if (s >= k)
        throw UserError(file, "--placement",
                        "device '" + it->second + "' of " + seq[size_t(t)]->describe() +
                            " is beyond --devices");
      pins.push_back({t, s});
    }
  for (size_t a = 0; a < pins.size(); ++a)
    for (size_t b = a + 1; b < pins.size(); ++b)
      if (pins[a].second > pins[b].second) {
        const Node *x = seq[size_t(pins[a].first)], *y = seq[size_t(pins[b].first)];
        throw UserError(file, y->jsonPath.empty() ? "'" + y->name + "'" : y->jsonPath + "/device",
                        "annotation " + devices[size_t(pins[b].second)] + " of " +
                            y->describe() + " comes after " + x->describe() + " on " +
                            devices[size_t(pins[a].second)] +
                            " in topological order, but --placement=auto keeps the stages in "
                            "the order of --devices");
      }
  p.minStart.assign(size_t(k) + 1, 0);
  p.maxStart.assign(size_t(k) + 1, n);
  for (auto [t, s] : pins)
    for (int st = 0; st <= k; ++st) {
      if (s < st) p.minStart[size_t(st)] = std::max(p.minStart[size_t(st)], t + 1);
      else p.maxStart[size_t(st)] = std::min(p.maxStart[size_t(st)], t);
    }
  p.minStart[0] = p.maxStart[0] = 0;
  p.minStart[size_t(k)] = p.maxStart[size_t(k)] = n;

  ChainResult r = partitionChain(p);
  if (!r.partition) {
    int b = std::min(r.blockedAt, n - 1);
    const Node *culprit = seq[size_t(b)];
    throw UserError(file, culprit->where(),
                    "unsatisfiable --device-memory: " + culprit->describe() + " needs " +
                        humanBytes(p.bytes[size_t(b)]) +
                        " bytes (its result and the params and inputs it first uses) and does "
                        "not fit on any of the " +
                        std::to_string(k) + " devices of " + humanBytes(p.memoryLimit) +
                        " bytes after the ops before it");
  }
  const ChainPartition &part = *r.partition;
  for (int s = 0; s < k; ++s)
    for (int t = part.starts[size_t(s)]; t < part.starts[size_t(s) + 1]; ++t)
      if (!pinned.count(seq[size_t(t)])) pinned[seq[size_t(t)]] = devices[size_t(s)];

  if (ctx.options.stats && ctx.log) {
    std::ostream &os = *ctx.log;
    char buf[256];
    std::snprintf(buf, sizeof buf, "auto-place: %d stages, bottleneck %.6g\n", k,
                  part.bottleneck);
    os << buf;
    for (int s = 0; s < k; ++s) {
      int i = part.starts[size_t(s)], j = part.starts[size_t(s) + 1];
      os << "auto-place: stage " << s << " @" << devices[size_t(s)] << ": ";
      if (i == j) {
        os << "empty\n";
        continue;
      }
      double f = 0;
      for (int t = i; t < j; ++t) f += p.flops[size_t(t)];
      std::snprintf(buf, sizeof buf, "%%%s .. %%%s (%d ops), flops %.6g, bytes %s",
                    seq[size_t(i)]->name.c_str(), seq[size_t(j) - 1]->name.c_str(), j - i, f,
                    humanBytes(stageBytes(p, i, j)).c_str());
      os << buf;
      if (j < n) {
        os << ", sends " << humanBytes(p.cutBytes[size_t(j)]) << " bytes:";
        for (const Node *v : order)
          if (auto h = home.find(v); h != home.end() && h->second < j && last.at(v) >= j &&
                                     v->kind != ir::NodeKind::State)
            os << " %" << v->name;
      }
      os << "\n";
    }
  }
  ctx.count("place", "auto-stages", k);
}

} // namespace mpc::passes
