//===- plan/PlanVerifier.cpp - consistency checks on a Plan ------===//
//
// Checks everything the runtimes rely on without re-checking: device names,
// buffers inside their regions and sized by their shapes, instruction
// operands naming existing buffers, read after write on each device (every
// buffer an instruction reads holds a value: an arena buffer once written and
// until another buffer's write covers some of its bytes), arena buffers never
// sharing bytes while both are live (save a kernel's result that takes over
// exactly the bytes of an operand dying at that kernel, the in-place reuse of
// codegen/InPlace.cpp), send/recv pairs matched
// one to one by channel with consistent peers and equal types, collectives
// run by every member of their group with one op, group and contribution
// type, channel ids that no two instructions share, tensor refs
// pointing at persistent buffers of their type, initial values sized by their
// tensors, persistent buffers that never share bytes, an op table equal to
// this build's op schemas, kernels with their operand counts, every declared
// attribute with its type and a result buffer of the type their op's shape
// rule gives (OpSignatures.h), and a schedule that cannot deadlock (a
// simulation with sends that never block, receives that wait, and
// collectives that wait for their whole group). Problems
// are reported, all of them, as "PATH: message" with a JSON-pointer-like
// path into the plan.
//
//===----------------------------------------------------------------------===//
#include "ops/Type.h"
#include "plan/Collective.h"
#include "plan/OpSignatures.h"
#include "plan/PlanFormat.h"
#include "plan/PlanIO.h"
#include "support/Error.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

namespace mpc::plan {

namespace {

bool validDeviceName(const std::string &s) {
  size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  std::string kind = s.substr(0, colon), idx = s.substr(colon + 1);
  if (kind != "cpu" && kind != "gpu") return false;
  if (idx.empty() || idx.size() > 4) return false;
  if (idx.size() > 1 && idx[0] == '0') return false;
  return std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// Orders op table entries and names by name (the table is sorted).
struct OpNameLess {
  bool operator()(const OpSignature &s, const std::string &n) const { return s.name < n; }
  bool operator()(const std::string &n, const OpSignature &s) const { return n < s.name; }
};

struct Verifier {
  const Plan &plan;
  std::vector<std::string> problems;
  bool shapesOk = true; ///< every buffer's shape is valid (the shape rules read them)

  void report(const std::string &path, const std::string &msg) { problems.push_back(path + ": " + msg); }

  bool validBuffer(const DeviceProgram &d, uint32_t id) const { return id < d.buffers.size(); }

  void checkBuffers(size_t di) {
    const DeviceProgram &d = plan.devices[di];
    for (size_t i = 0; i < d.buffers.size(); ++i) {
      const Buffer &b = d.buffers[i];
      // Paths are spelt out only for a problem: this runs once per buffer.
      auto bp = [&] { return "/devices/" + std::to_string(di) + "/buffers/" + std::to_string(i); };
      if (b.id != i) report(bp(), "buffer id " + std::to_string(b.id) + " differs from its index");
      auto n = ops::checkedNumElements(b.shape);
      if (!n) {
        report(bp() + "/shape", b.shape.size() > ops::kMaxRank ? ops::rankLimitText(b.shape.size())
                                                               : "invalid shape");
        shapesOk = false;
        continue;
      }
      const uint64_t want = uint64_t(*n) * uint64_t(ops::dtypeSize(b.dtype));
      if (b.bytes != want)
        report(bp() + "/bytes", std::to_string(b.bytes) + " bytes for " +
                                  typeText(b.dtype, b.shape) + " (expected " +
                                  std::to_string(want) + ")");
      if (b.offset % kPlanAlignment != 0)
        report(bp() + "/offset", "offset " + std::to_string(b.offset) + " is not 64-byte aligned");
      uint64_t limit = b.region == Region::Arena ? d.arenaBytes : d.persistentBytes;
      if (b.offset > limit || b.bytes > limit - b.offset)
        report(bp(), "bytes [" + std::to_string(b.offset) + ", +" + std::to_string(b.bytes) +
                       ") lie outside the " + (b.region == Region::Arena ? "arena" : "persistent region") +
                       " (" + std::to_string(limit) + " bytes)");
    }
  }

  /// Persistent buffers keep their bytes across steps (params, state,
  /// inputs, outputs, the loss): no two may share a byte, or an update of
  /// one silently changes the other.
  void checkPersistentOverlap(size_t di) {
    const DeviceProgram &d = plan.devices[di];
    std::vector<const Buffer *> bufs;
    for (const Buffer &b : d.buffers)
      if (b.region == Region::Persistent && b.bytes > 0 && ops::checkedNumElements(b.shape))
        bufs.push_back(&b);
    std::sort(bufs.begin(), bufs.end(), [](const Buffer *a, const Buffer *b) {
      return a->offset != b->offset ? a->offset < b->offset : a->id < b->id;
    });
    const Buffer *reach = nullptr; // the buffer ending furthest so far
    for (const Buffer *b : bufs) {
      if (reach && b->offset < reach->offset + reach->bytes) {
        const Buffer &x = reach->id < b->id ? *reach : *b, &y = reach->id < b->id ? *b : *reach;
        report("/devices/" + std::to_string(di) + "/buffers/" + std::to_string(y.id),
               "persistent buffers " + std::to_string(x.id) + " ('" + x.name + "') and " +
                   std::to_string(y.id) + " ('" + y.name + "') overlap");
      }
      if (!reach || b->offset + b->bytes > reach->offset + reach->bytes) reach = b;
    }
  }

  /// The op table the plan carries: one entry per op, sorted by name.
  void checkOpTable() {
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const OpSignature &s = plan.ops[i];
      std::string p = "/ops/" + std::to_string(i);
      if (i > 0 && !(plan.ops[i - 1].name < s.name))
        report(p + "/name", "op '" + s.name + "' is out of order or listed twice");
      if (std::optional<std::string> why = checkSignature(s)) report(p, *why);
    }
  }

  /// Each kernel against its op's schema: operand counts, attributes and the
  /// shape rule over its buffers (plan/OpSignatures.h).
  void checkKernels(size_t di) {
    const DeviceProgram &d = plan.devices[di];
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      const Instr &in = d.instrs[i];
      if (in.kind != InstrKind::Kernel) continue;
      auto ip = [&] { return "/devices/" + std::to_string(di) + "/instrs/" + std::to_string(i); };
      const ops::OpSchema *op = ops::lookupSchema(in.op);
      if (!op || !std::binary_search(plan.ops.begin(), plan.ops.end(), in.op, OpNameLess{})) {
        report(ip() + "/op", "op '" + in.op + "' has no entry in the plan's op table (/ops)");
        continue;
      }
      for (const auto &[where, msg] : checkKernel(in, *op, d)) report(ip() + where, msg);
    }
  }

  /// Returns false when an operand is out of range (later checks need valid ids).
  bool checkInstrs(size_t di) {
    const DeviceProgram &d = plan.devices[di];
    bool ok = true;
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      const Instr &in = d.instrs[i];
      // Paths are spelt out only for a problem: this runs once per instruction.
      auto ip = [&] { return "/devices/" + std::to_string(di) + "/instrs/" + std::to_string(i); };
      auto checkId = [&](uint32_t id, auto path) {
        if (!validBuffer(d, id)) {
          report(path(), "buffer " + std::to_string(id) + " does not exist (" + d.device + " has " +
                             std::to_string(d.buffers.size()) + " buffers)");
          ok = false;
        }
      };
      for (size_t k = 0; k < in.inputs.size(); ++k)
        checkId(in.inputs[k], [&] { return ip() + "/inputs/" + std::to_string(k); });
      auto output = [&] { return ip() + "/output"; };
      switch (in.kind) {
      case InstrKind::Kernel:
        if (in.op.empty()) report(ip() + "/op", "kernel without an op name");
        checkId(in.output, output);
        break;
      case InstrKind::Send:
      case InstrKind::Recv:
        if (in.kind == InstrKind::Send && in.inputs.size() != 1) {
          report(ip() + "/inputs", "a send takes exactly one buffer, got " + std::to_string(in.inputs.size()));
          ok = false;
        }
        if (in.kind == InstrKind::Recv) checkId(in.output, output);
        if (in.peer >= plan.devices.size() || in.peer == di) {
          report(ip() + "/peer", "peer " + std::to_string(in.peer) + " is not another device of the plan");
          ok = false;
        }
        break;
      case InstrKind::Collective:
        if (in.inputs.size() != 1) {
          report(ip() + "/inputs", "a collective takes exactly one buffer, got " +
                                       std::to_string(in.inputs.size()));
          ok = false;
        }
        checkId(in.output, output);
        ok = checkGroup(di, in, ip()) && ok;
        // A member reads its contribution while it writes its result.
        if (in.inputs.size() == 1 && validBuffer(d, in.inputs[0]) && validBuffer(d, in.output)) {
          const Buffer &x = d.buffers[in.inputs[0]], &y = d.buffers[in.output];
          if (x.id == y.id || (x.region == y.region && x.offset < y.offset + y.bytes &&
                               y.offset < x.offset + x.bytes && x.bytes && y.bytes)) {
            report(ip() + "/output", "a collective's result '" + y.name +
                                         "' shares bytes with its contribution '" + x.name + "'");
            ok = false;
          }
        }
        break;
      }
    }
    return ok;
  }

  /// A collective's op and group: a known collective, members that are
  /// devices of the plan, each once, this device among them, and channel ids
  /// that fit in 32 bits.
  bool checkGroup(size_t di, const Instr &in, const std::string &ip) {
    bool ok = true;
    if (!collectiveKind(in.op)) {
      report(ip + "/op", "'" + in.op + "' is not a collective (expected all_reduce, " +
                             "reduce_scatter or all_gather)");
      ok = false;
    }
    if (in.group.empty() || in.group.size() > size_t(ops::OpSchema::kMaxVariadicArity)) {
      report(ip + "/group", "a group of " + std::to_string(in.group.size()) +
                                " devices (a collective has 1 to " +
                                std::to_string(ops::OpSchema::kMaxVariadicArity) + ")");
      return false;
    }
    size_t self = 0;
    for (size_t k = 0; k < in.group.size(); ++k) {
      uint32_t g = in.group[k];
      std::string gp = ip + "/group/" + std::to_string(k);
      if (g >= plan.devices.size()) {
        report(gp, "device " + std::to_string(g) + " does not exist");
        ok = false;
      } else if (std::find(in.group.begin(), in.group.begin() + long(k), g) !=
                 in.group.begin() + long(k)) {
        report(gp, plan.devices[g].device + " is in the group twice");
        ok = false;
      }
      if (g == di) ++self;
    }
    if (self != 1) {
      report(ip + "/group", plan.devices[di].device + " runs a collective of a group it is not in");
      ok = false;
    }
    if (uint64_t(in.channel) + collectiveChannels(in.group.size()) > (uint64_t(1) << 32)) {
      report(ip + "/channel", "channel ids from " + std::to_string(in.channel) +
                                  " for a group of " + std::to_string(in.group.size()) +
                                  " run past 2^32");
      ok = false;
    }
    return ok;
  }

  /// Read after write: walking the device's list in order, every buffer an
  /// instruction reads (a kernel's operands, a send's buffer) holds a value.
  /// A persistent buffer holds one from the start of the step. An arena buffer
  /// holds one once a kernel or a receive writes it (as its result, or as an
  /// operand its op updates in place, ops::OpSchema::mutatedOperands), and
  /// loses it when a write of another buffer covers any of its bytes: the
  /// memory planner reuses arena bytes, and a result may take over a dying
  /// operand in place, so a later read of the overwritten buffer reads
  /// another value. `owner` maps each written byte range of the arena to the
  /// buffer that wrote it last; a written buffer holds its value while every
  /// range over its bytes is its own. A write splits or erases the ranges it
  /// covers and adds at most three, and a read meets at most two ranges, so a
  /// device costs O((instructions + operands) log buffers) however much the
  /// arena is reused, and however a hostile plan lays its buffers out.
  void checkReadAfterWrite(size_t di) {
    const DeviceProgram &d = plan.devices[di];
    // The spans below need every arena buffer inside the arena (checkBuffers
    // reports those that are not).
    for (const Buffer &b : d.buffers)
      if (b.region == Region::Arena &&
          (b.offset > d.arenaBytes || b.bytes > d.arenaBytes - b.offset))
        return;
    struct Span {
      uint64_t end;
      uint32_t buffer; ///< the buffer that wrote these bytes last
      size_t instr;    ///< the instruction that wrote them
    };
    std::map<uint64_t, Span> owner; // start -> span; the spans are disjoint
    std::vector<bool> written(d.buffers.size(), false);
    auto write = [&](uint32_t id, size_t i) {
      const Buffer &b = d.buffers[id];
      if (b.region != Region::Arena) return;
      written[id] = true;
      if (b.bytes == 0) return;
      uint64_t start = b.offset, end = b.offset + b.bytes;
      auto it = owner.lower_bound(start);
      if (it != owner.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > start) {
          Span tail = prev->second; // a span reaching past the write keeps its rest
          prev->second.end = start;
          if (tail.end > end) owner.emplace(end, tail);
        }
      }
      while (it != owner.end() && it->first < end) {
        if (it->second.end > end) owner.emplace(end, it->second);
        it = owner.erase(it);
      }
      owner.emplace(start, Span{end, id, i});
    };
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      const Instr &in = d.instrs[i];
      for (size_t k = 0; k < in.inputs.size(); ++k) {
        const Buffer &b = d.buffers[in.inputs[k]];
        if (b.region != Region::Arena) continue;
        std::string what;
        if (!written[b.id]) {
          what = "before any instruction writes it";
        } else {
          // The spans over b's bytes, lowest first: b's own, or the first of
          // some written since. Pieces of b are never adjacent (only b's
          // own write, covering all of it, makes one), so this stops at the
          // first or second span.
          auto it = owner.upper_bound(b.offset);
          if (it != owner.begin() && std::prev(it)->second.end > b.offset) --it;
          const Span *over = nullptr;
          for (; !over && it != owner.end() && it->first < b.offset + b.bytes; ++it)
            if (it->second.buffer != b.id) over = &it->second;
          if (!over) continue;
          what = "after instruction " + std::to_string(over->instr) +
                 " overwrote its bytes (buffer '" + d.buffers[over->buffer].name + "')";
        }
        report("/devices/" + std::to_string(di) + "/instrs/" + std::to_string(i) + "/inputs/" +
                   std::to_string(k),
               d.device + " instruction " + std::to_string(i) +
                   (in.node.empty() ? "" : " ('" + in.node + "')") + " reads buffer '" + b.name +
                   "' " + what);
      }
      if (in.kind == InstrKind::Send) continue;
      if (in.kind == InstrKind::Kernel)
        if (const ops::OpSchema *op = ops::lookupSchema(in.op))
          for (int k : op->mutatedOperands)
            if (size_t(k) < in.inputs.size()) write(in.inputs[size_t(k)], i);
      write(in.output, i);
    }
  }

  /// Arena buffers live at once never share bytes, save a kernel's result
  /// taking over exactly the bytes of an operand dying there (in place): a
  /// kernel may read its operands while it writes its result, so only that
  /// exact takeover is safe within one instruction.
  void checkArena(size_t di) {
    const DeviceProgram &d = plan.devices[di];
    std::string dp = "/devices/" + std::to_string(di);
    size_t nb = d.buffers.size();
    std::vector<int64_t> first(nb, -1), last(nb, -1);
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      const Instr &in = d.instrs[i];
      auto touch = [&](uint32_t id) {
        if (first[id] < 0) first[id] = int64_t(i);
        last[id] = int64_t(i);
      };
      for (uint32_t id : in.inputs) touch(id);
      if (in.kind != InstrKind::Send) touch(in.output);
    }
    // Sweep over time: a buffer entering its live range is checked against
    // its neighbours by offset among the buffers live at that moment (which
    // are pairwise disjoint, so the neighbours are the only candidates).
    std::vector<std::vector<uint32_t>> starts(d.instrs.size()), ends(d.instrs.size());
    for (uint32_t id = 0; id < nb; ++id)
      if (d.buffers[id].region == Region::Arena && first[id] >= 0 && d.buffers[id].bytes > 0) {
        starts[size_t(first[id])].push_back(id);
        ends[size_t(last[id])].push_back(id);
      }
    std::map<uint64_t, uint32_t> live; // offset -> buffer
    std::vector<bool> tracked(nb, false);
    // In place: instruction i's result has exactly the bytes of one of its
    // operands whose live range ends at i. Which kernels may run in place is
    // the compiler's call (ir::OpInfo::inPlaceOperands); here only the bytes.
    auto takesOver = [&](uint32_t operand, uint32_t result, size_t i) {
      const Instr &in = d.instrs[i];
      const Buffer &x = d.buffers[operand], &r = d.buffers[result];
      return in.kind == InstrKind::Kernel && in.output == result && last[operand] == int64_t(i) &&
             std::find(in.inputs.begin(), in.inputs.end(), operand) != in.inputs.end() &&
             x.offset == r.offset && x.bytes == r.bytes;
    };
    for (size_t i = 0; i < d.instrs.size(); ++i) {
      for (uint32_t id : starts[i]) {
        const Buffer &b = d.buffers[id];
        auto same = live.find(b.offset);
        if (same != live.end() && takesOver(same->second, id, i)) {
          tracked[same->second] = false;
          same->second = id;
          tracked[id] = true;
          continue;
        }
        const Buffer *clash = nullptr;
        auto next = live.lower_bound(b.offset);
        if (next != live.end() && next->first < b.offset + b.bytes) clash = &d.buffers[next->second];
        if (!clash && next != live.begin()) {
          const Buffer &prev = d.buffers[std::prev(next)->second];
          if (prev.offset + prev.bytes > b.offset) clash = &prev;
        }
        if (clash) {
          const Buffer &a = clash->id < b.id ? *clash : b, &c = clash->id < b.id ? b : *clash;
          report(dp + "/buffers/" + std::to_string(c.id),
                 "arena buffers " + std::to_string(a.id) + " ('" + a.name + "') and " +
                     std::to_string(c.id) + " ('" + c.name + "') share bytes while both are live");
          continue;
        }
        live.emplace(b.offset, id);
        tracked[id] = true;
      }
      for (uint32_t id : ends[i])
        if (tracked[id]) live.erase(d.buffers[id].offset);
    }
  }

  struct End {
    size_t device, instr;
  };

  static std::string instrPath(size_t di, size_t i) {
    return "/devices/" + std::to_string(di) + "/instrs/" + std::to_string(i);
  }

  /// The members of each collective, by base channel: every device of the
  /// group runs it once, with the same op and group; the contributions have
  /// one type and each member's result the type ops::collectiveResult gives.
  /// The channel ids of collectives, sends and receives do not overlap.
  /// Returns false when they are inconsistent (no deadlock check then).
  bool checkCollectives(const std::map<uint32_t, End> &sends, const std::map<uint32_t, End> &recvs) {
    bool ok = true;
    std::map<uint32_t, std::vector<End>> members;
    for (size_t di = 0; di < plan.devices.size(); ++di)
      for (size_t i = 0; i < plan.devices[di].instrs.size(); ++i)
        if (plan.devices[di].instrs[i].kind == InstrKind::Collective)
          members[plan.devices[di].instrs[i].channel].push_back({di, i});
    // Channel id ranges, in order of their start: [first, last] and who owns it.
    std::map<uint64_t, std::pair<uint64_t, std::string>> ranges;
    auto claim = [&](uint64_t first, uint64_t last, const std::string &path) {
      auto next = ranges.lower_bound(first);
      const std::pair<const uint64_t, std::pair<uint64_t, std::string>> *clash = nullptr;
      if (next != ranges.end() && next->first <= last) clash = &*next;
      else if (next != ranges.begin() && std::prev(next)->second.first >= first) clash = &*std::prev(next);
      if (clash) {
        report(path + "/channel", "channel ids " + std::to_string(first) + " to " +
                                      std::to_string(last) + " overlap those of " +
                                      clash->second.second);
        ok = false;
        return;
      }
      ranges.emplace(first, std::pair{last, path});
    };
    for (const auto &[ch, ends] : members) {
      const Instr &first = plan.devices[ends[0].device].instrs[ends[0].instr];
      std::string fp = instrPath(ends[0].device, ends[0].instr);
      claim(ch, ch + collectiveChannels(first.group.size()) - 1, fp);
      const Buffer &x0 = plan.devices[ends[0].device].buffers[first.inputs[0]];
      for (const End &e : ends) {
        const Instr &in = plan.devices[e.device].instrs[e.instr];
        std::string ep = instrPath(e.device, e.instr);
        if (in.op != first.op || in.group != first.group) {
          report(ep, in.op + " on channel " + std::to_string(ch) + " differs from the " +
                         first.op + " of " + fp + " in its op or group");
          ok = false;
          continue;
        }
        const DeviceProgram &d = plan.devices[e.device];
        const Buffer &x = d.buffers[in.inputs[0]], &y = d.buffers[in.output];
        if (x.dtype != x0.dtype || x.shape != x0.shape) {
          report(ep + "/inputs/0", in.op + " on channel " + std::to_string(ch) + " contributes " +
                                       typeText(x.dtype, x.shape) + " where " + fp +
                                       " contributes " + typeText(x0.dtype, x0.shape));
          ok = false;
          continue;
        }
        if (!shapesOk) continue;
        try {
          ops::TensorType want = ops::collectiveResult(*collectiveKind(in.op), {x.dtype, x.shape},
                                                       in.group.size());
          if (want.dtype != y.dtype || want.shape != y.shape) {
            report(ep + "/output", in.op + " over " + std::to_string(in.group.size()) +
                                       " devices of " + typeText(x.dtype, x.shape) + " gives " +
                                       want.str() + ", but its result buffer is " +
                                       typeText(y.dtype, y.shape));
            ok = false;
          }
        } catch (const RuleError &err) {
          report(ep, err.what());
          ok = false;
        }
      }
      for (uint32_t g : first.group)
        if (std::none_of(ends.begin(), ends.end(), [&](const End &e) { return e.device == g; })) {
          report(fp, first.op + " on channel " + std::to_string(ch) + " has no member on " +
                         plan.devices[g].device + ", which is in its group");
          ok = false;
        }
      for (size_t a = 0; a < ends.size(); ++a)
        for (size_t b = 0; b < a; ++b)
          if (ends[a].device == ends[b].device) {
            report(instrPath(ends[a].device, ends[a].instr),
                   "a second collective on channel " + std::to_string(ch) + " on " +
                       plan.devices[ends[a].device].device);
            ok = false;
          }
    }
    for (const auto &[ch, e] : sends) claim(ch, ch, instrPath(e.device, e.instr));
    for (const auto &[ch, e] : recvs)
      if (!sends.count(ch)) claim(ch, ch, instrPath(e.device, e.instr));
    return ok;
  }

  /// Returns false when channels are inconsistent (no deadlock check then).
  bool checkChannels() {
    std::map<uint32_t, End> sends, recvs;
    bool ok = true;
    for (size_t di = 0; di < plan.devices.size(); ++di) {
      const DeviceProgram &d = plan.devices[di];
      for (size_t i = 0; i < d.instrs.size(); ++i) {
        const Instr &in = d.instrs[i];
        if (in.kind == InstrKind::Kernel || in.kind == InstrKind::Collective) continue;
        auto &ends = in.kind == InstrKind::Send ? sends : recvs;
        std::string ip = "/devices/" + std::to_string(di) + "/instrs/" + std::to_string(i);
        if (!ends.emplace(in.channel, End{di, i}).second) {
          report(ip + "/channel", std::string("channel ") + std::to_string(in.channel) + " has two " +
                                      (in.kind == InstrKind::Send ? "sends" : "receives"));
          ok = false;
        }
      }
    }
    for (const auto &[ch, s] : sends) {
      std::string sp = "/devices/" + std::to_string(s.device) + "/instrs/" + std::to_string(s.instr);
      auto it = recvs.find(ch);
      if (it == recvs.end()) {
        report(sp, "send on channel " + std::to_string(ch) + " has no matching receive");
        ok = false;
        continue;
      }
      const End &r = it->second;
      const Instr &si = plan.devices[s.device].instrs[s.instr];
      const Instr &ri = plan.devices[r.device].instrs[r.instr];
      std::string rp = "/devices/" + std::to_string(r.device) + "/instrs/" + std::to_string(r.instr);
      if (si.peer != r.device || ri.peer != s.device) {
        report(rp, "channel " + std::to_string(ch) + " joins " + plan.devices[s.device].device + " -> " +
                       plan.devices[r.device].device + " but the peers say otherwise");
        ok = false;
        continue;
      }
      const Buffer &a = plan.devices[s.device].buffers[si.inputs[0]];
      const Buffer &b = plan.devices[r.device].buffers[ri.output];
      if (a.dtype != b.dtype || a.shape != b.shape)
        report(rp, "channel " + std::to_string(ch) + " sends " + typeText(a.dtype, a.shape) +
                       " but receives " + typeText(b.dtype, b.shape));
    }
    for (const auto &[ch, r] : recvs)
      if (!sends.count(ch)) {
        report("/devices/" + std::to_string(r.device) + "/instrs/" + std::to_string(r.instr),
               "receive on channel " + std::to_string(ch) + " has no matching send");
        ok = false;
      }
    return checkCollectives(sends, recvs) && ok;
  }

  /// Runs every device's list with non-blocking sends and blocking receives;
  /// a collective is a meeting: no member leaves it before every member of
  /// its group has come to it (which is more than its messages need, so a
  /// plan that passes cannot deadlock on them).
  void checkDeadlock() {
    size_t n = plan.devices.size();
    std::vector<size_t> pc(n, 0);
    std::map<uint32_t, bool> sent;
    std::map<uint32_t, size_t> arrived; // collective channel -> members at it
    std::vector<bool> waiting(n, false); // device counted in `arrived`
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t di = 0; di < n; ++di) {
        const auto &instrs = plan.devices[di].instrs;
        while (pc[di] < instrs.size()) {
          const Instr &in = instrs[pc[di]];
          if (in.kind == InstrKind::Recv && !sent[in.channel]) break;
          if (in.kind == InstrKind::Send) sent[in.channel] = true;
          if (in.kind == InstrKind::Collective) {
            if (!waiting[di]) {
              waiting[di] = true;
              ++arrived[in.channel];
              progress = true;
            }
            if (arrived[in.channel] < in.group.size()) break;
            waiting[di] = false; // the last to leave needs no count
          }
          ++pc[di];
          progress = true;
        }
      }
    }
    for (size_t di = 0; di < n; ++di) {
      if (pc[di] >= plan.devices[di].instrs.size()) continue;
      const Instr &in = plan.devices[di].instrs[pc[di]];
      std::string msg = "the schedule deadlocks: " + plan.devices[di].device;
      if (in.kind == InstrKind::Collective) {
        std::string absent;
        for (uint32_t g : in.group) {
          const auto &gi = plan.devices[g].instrs;
          if (pc[g] >= gi.size() || gi[pc[g]].kind != InstrKind::Collective ||
              gi[pc[g]].channel != in.channel)
            absent += (absent.empty() ? "" : ", ") + plan.devices[g].device;
        }
        msg += " waits forever in " + in.op + " on channel " + std::to_string(in.channel) +
               " for " + absent + " (the members of a group must run their collectives in " +
               "the same order)";
      } else {
        msg += " waits forever on channel " + std::to_string(in.channel);
      }
      report(instrPath(di, pc[di]), msg);
    }
  }

  void checkRef(const TensorRef &r, const std::string &path, bool state = false) {
    if (!r.shards.empty()) return checkShards(r, path, state);
    checkPlacement(r, {r.device, r.buffer}, path);
    for (size_t i = 0; i < r.mirrors.size(); ++i) {
      std::string mp = path + "/mirrors/" + std::to_string(i);
      const Placement &m = r.mirrors[i];
      bool twice = m.device == r.device;
      for (size_t j = 0; j < i; ++j) twice = twice || r.mirrors[j].device == m.device;
      if (twice && m.device < plan.devices.size())
        report(mp + "/0", "'" + r.name + "' has two placements on " + plan.devices[m.device].device);
      checkPlacement(r, m, mp);
    }
  }

  /// A sharded state (TensorRef::shards): parts on distinct devices, the
  /// first its own placement, each a persistent buffer of [shardElements].
  void checkShards(const TensorRef &r, const std::string &path, bool state) {
    std::string sp = path + "/shards";
    if (!state && r.shardAxis < 0)
      return report(sp, "'" + r.name + "' is sharded, and only optimizer state may be");
    if (r.shardAxis >= 0 && (size_t(r.shardAxis) >= r.shape.size() ||
                             r.shape[size_t(r.shardAxis)] % int64_t(r.shards.size()) != 0))
      return report(path + "/shard_axis", "'" + r.name + "' " + shapeText(r.shape) +
                                              " does not split along axis " +
                                              std::to_string(r.shardAxis) + " into " +
                                              std::to_string(r.shards.size()) + " equal parts");
    if (!r.mirrors.empty() && (r.shardAxis < 0 || r.mirrors.size() % r.shards.size() != 0))
      return report(sp, "'" + r.name + "' is both mirrored and sharded" +
                            (r.shardAxis < 0 ? std::string()
                                             : ", with " + std::to_string(r.mirrors.size()) +
                                                   " mirrors of its " +
                                                   std::to_string(r.shards.size()) + " parts"));
    if (r.shards.size() > size_t(ops::OpSchema::kMaxVariadicArity))
      return report(sp, "'" + r.name + "' has " + std::to_string(r.shards.size()) +
                            " shards; at most " + std::to_string(ops::OpSchema::kMaxVariadicArity));
    if (!(r.shards[0] == Placement{r.device, r.buffer}))
      report(sp + "/0", "'" + r.name + "' names another placement than its first shard");
    if (r.dtype != DType::F32) report(path + "/dtype", "sharded '" + r.name + "' must be f32");
    // Each part's buffer: flat for ZeRO-1, the part's shape along an axis.
    TensorRef part = r;
    part.shape = {r.shardElements()};
    if (r.shardAxis >= 0) {
      part.shape = r.shape;
      part.shape[size_t(r.shardAxis)] /= int64_t(r.shards.size());
    }
    for (size_t i = 0; i < r.shards.size(); ++i) {
      std::string ip = sp + "/" + std::to_string(i);
      const Placement &m = r.shards[i];
      bool twice = false;
      for (size_t j = 0; j < i; ++j) twice = twice || r.shards[j].device == m.device;
      if (twice && m.device < plan.devices.size())
        report(ip + "/0", "'" + r.name + "' has two shards on " + plan.devices[m.device].device);
      checkPlacement(part, m, ip);
    }
    // The replicas' parts: each replica's on distinct devices.
    for (size_t k = 0; k < r.mirrors.size(); ++k) {
      std::string mp = path + "/mirrors/" + std::to_string(k);
      const Placement &m = r.mirrors[k];
      bool twice = false;
      for (size_t j = k - k % r.shards.size(); j < k; ++j) twice = twice || r.mirrors[j].device == m.device;
      if (twice && m.device < plan.devices.size())
        report(mp + "/0", "'" + r.name + "' has two parts of one replica on " + plan.devices[m.device].device);
      checkPlacement(part, m, mp);
    }
  }

  /// `r`'s placement `at` (its own, or a mirror at `path`): a persistent
  /// buffer of its type.
  void checkPlacement(const TensorRef &ref, Placement at, const std::string &path) {
    TensorRef r = ref;
    r.device = at.device;
    r.buffer = at.buffer;
    if (r.device >= plan.devices.size()) {
      report(path + "/device", "device " + std::to_string(r.device) + " does not exist");
      return;
    }
    const DeviceProgram &d = plan.devices[r.device];
    if (r.buffer >= d.buffers.size()) {
      report(path + "/buffer", "buffer " + std::to_string(r.buffer) + " does not exist on " + d.device);
      return;
    }
    const Buffer &b = d.buffers[r.buffer];
    if (b.region != Region::Persistent)
      report(path + "/buffer", "'" + r.name + "' refers to arena buffer " + std::to_string(b.id) +
                                   " (user-visible tensors live in the persistent region)");
    if (b.dtype != r.dtype || b.shape != r.shape)
      report(path, "'" + r.name + "' is " + typeText(r.dtype, r.shape) + " but its buffer is " +
                       typeText(b.dtype, b.shape));
  }

  /// Schedule annotations only label instructions (runtimes ignore them),
  /// but `mpc dump --schedule` indexes with them.
  void checkPipeline() {
    const PipelineInfo &pi = plan.pipeline;
    bool pipelined = pi.microbatches > 1;
    if (pi.microbatches < 1) report("/pipeline/microbatches", "must be at least 1");
    for (size_t s = 0; s < pi.stages.size(); ++s)
      if (pi.stages[s] >= plan.devices.size())
        report("/pipeline/stages/" + std::to_string(s),
               "device index " + std::to_string(pi.stages[s]) + " out of range");
    for (size_t di = 0; di < plan.devices.size(); ++di)
      for (size_t i = 0; i < plan.devices[di].instrs.size(); ++i) {
        const Action &a = plan.devices[di].instrs[i].action;
        if (a.kind == Action::None) continue;
        std::string p = "/devices/" + std::to_string(di) + "/instrs/" + std::to_string(i) + "/action";
        if (!pipelined) report(p, "a schedule action in a plan that is not pipelined");
        else if (a.kind != Action::Update &&
                 (a.microbatch < 0 || a.microbatch >= pi.microbatches || a.stage < 0 ||
                  size_t(a.stage) >= pi.stages.size()))
          report(p, "stage " + std::to_string(a.stage) + " or micro-batch " +
                        std::to_string(a.microbatch) + " out of range");
      }
  }

  void run() {
    checkOpTable(); // first: the kernels are checked against it
    if (plan.devices.empty()) report("/devices", "a plan needs at least one device");
    bool idsOk = true;
    for (size_t di = 0; di < plan.devices.size(); ++di) {
      const DeviceProgram &d = plan.devices[di];
      std::string dp = "/devices/" + std::to_string(di);
      if (!validDeviceName(d.device)) report(dp + "/name", "invalid device name '" + d.device + "'");
      for (size_t dj = 0; dj < di; ++dj)
        if (plan.devices[dj].device == d.device) report(dp + "/name", "device '" + d.device + "' appears twice");
      checkBuffers(di);
      checkPersistentOverlap(di);
      idsOk = checkInstrs(di) && idsOk;
    }
    if (idsOk) {
      for (size_t di = 0; di < plan.devices.size(); ++di) {
        checkReadAfterWrite(di);
        checkArena(di);
        if (shapesOk) checkKernels(di);
      }
      if (checkChannels()) checkDeadlock();
    }
    checkPipeline();
    auto refs = [&](const std::vector<TensorRef> &rs, const char *key) {
      for (size_t i = 0; i < rs.size(); ++i)
        checkRef(rs[i], std::string("/") + key + "/" + std::to_string(i), rs.data() == plan.states.data());
    };
    refs(plan.inputs, "inputs");
    refs(plan.outputs, "outputs");
    refs(plan.params, "params");
    refs(plan.states, "states");
    if (plan.hasLoss) {
      checkRef(plan.loss, "/loss");
      if (ops::checkedNumElements(plan.loss.shape).value_or(0) != 1)
        report("/loss", "the loss must have one element");
    }
    size_t want = plan.params.size() + plan.states.size();
    if (plan.initialValues.size() != want) {
      report("/initial_values", std::to_string(plan.initialValues.size()) + " initial values for " +
                                    std::to_string(want) + " params and states");
    } else {
      for (size_t i = 0; i < want; ++i) {
        const TensorRef &r = i < plan.params.size() ? plan.params[i] : plan.states[i - plan.params.size()];
        auto n = ops::checkedNumElements(r.shape);
        if (!n || plan.initialValues[i].size() != uint64_t(*n) * uint64_t(ops::dtypeSize(r.dtype)))
          report("/initial_values/" + std::to_string(i),
                 std::to_string(plan.initialValues[i].size()) + " bytes for '" + r.name + "' " +
                     typeText(r.dtype, r.shape));
      }
    }
  }
};

} // namespace

std::vector<std::string> verifyPlan(const Plan &plan) {
  Verifier v{plan, {}};
  v.run();
  return std::move(v.problems);
}

} // namespace mpc::plan
