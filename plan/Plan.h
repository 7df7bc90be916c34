//===- plan/Plan.h - the in-memory execution plan ---------------===//
//
// The one contract between the compiler and the runtimes. Codegen builds a
// Plan from a verified training graph and writes it as plan.bin
// (PlanWriter); the runtimes read plan.bin (PlanReader, PlanVerifier) and
// execute it. Nothing here knows the IR: ops are names, attributes are plain
// values, and every buffer, offset, shape and peer is fixed.
//
// One step of training = every device runs its instruction list once, in
// order, concurrently with the other devices; send/recv pairs with the same
// channel id move a buffer from one device's memory to another's. The action
// list is deliberately general (kernel calls, sends, receives): pipeline
// schedules (micro-batches, 1F1B) are new orderings of the same actions.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/DType.h"
#include "ops/Shard.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace mpc::plan {

/// Element types and attribute values are the op contract's
/// (ops/DType.h, ops/Attribute.h): the IR's, one enumeration each.
using ops::DType;
using ops::dtypeName;
using AttrValue = ops::AttrValue;
using AttrMap = ops::AttrMap;

enum class Region : uint8_t {
  Arena = 0,      ///< temporaries; offsets reused once a value is dead
  Persistent = 1, ///< params, optimizer state, inputs and outputs: never reused
};

struct Buffer {
  uint32_t id = 0;   ///< index in DeviceProgram::buffers
  std::string name;  ///< the IR value it holds ("h1", "w0.grad", "z0.to.cpu1")
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Region region = Region::Arena;
  uint64_t offset = 0; ///< byte offset in its region, 64-byte aligned
  uint64_t bytes = 0;  ///< 4 * element count
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

enum class InstrKind : uint8_t {
  Kernel = 0, ///< output = op(inputs...); optimizer ops also update inputs in place
  Send = 1,   ///< send buffer inputs[0] to device `peer` on `channel`
  Recv = 2,   ///< receive into buffer `output` from device `peer` on `channel`
  /// op ("all_reduce", "reduce_scatter", "all_gather") over the devices
  /// `group`, in order, this one among them: contributes buffer inputs[0],
  /// gets buffer `output`. Its messages use the channel ids from `channel`
  /// on (plan/Collective.h). Every member of the group runs it, with the
  /// same op, group and channel.
  Collective = 3,
};

/// "kernel", "send", "recv", "collective": the kind's name in the JSON
/// dump and in traces.
constexpr const char *instrKindName(InstrKind k) {
  switch (k) {
  case InstrKind::Kernel: return "kernel";
  case InstrKind::Send: return "send";
  case InstrKind::Recv: return "recv";
  case InstrKind::Collective: return "collective";
  }
  return "?";
}

/// The pipeline schedule action an instruction belongs to (pipelined plans
/// only; docs/pipelining.md). Informational: runtimes execute instructions in
/// list order and ignore it; `mpc dump --schedule` draws the grid from it.
struct Action {
  enum Kind : uint8_t {
    None = 0,     ///< not pipelined
    Forward = 1,  ///< forward of (stage, microbatch)
    Backward = 2, ///< backward of (stage, microbatch): under zb-*, its input gradients only
    Update = 3,   ///< optimizer update, once per step
    WeightGrad = 4, ///< zb-* schedules: the weight gradients of (stage, microbatch)
  };
  Kind kind = None;
  int32_t stage = -1;      ///< virtual stage (Forward, Backward, WeightGrad)
  int32_t microbatch = -1; ///< (Forward, Backward, WeightGrad)
  // Spelled out: CUDA translation units include this header as C++17.
  bool operator==(const Action &o) const {
    return kind == o.kind && stage == o.stage && microbatch == o.microbatch;
  }
};

struct Instr {
  InstrKind kind = InstrKind::Kernel;
  std::string op;               ///< Kernel: op name, e.g. "matmul"
  AttrMap attrs;                ///< Kernel: every attribute the op declares
  std::vector<uint32_t> inputs; ///< buffer ids on this device
  uint32_t output = 0;          ///< Kernel, Recv: buffer id on this device
  uint32_t channel = 0;         ///< Send/Recv: pairs the two ends, unique per plan
  uint32_t peer = 0;            ///< Send/Recv: the other device's index in Plan::devices
  std::string node;             ///< IR node this instruction came from (for dump/errors)
  Action action;                ///< pipelined plans: the schedule action
  std::vector<uint32_t> group;  ///< Collective: the members' device indices, in order
};

struct DeviceProgram {
  std::string device; ///< "cpu:0", "gpu:1"
  std::vector<Buffer> buffers;
  uint64_t arenaBytes = 0;
  uint64_t persistentBytes = 0;
  uint64_t noReuseBytes = 0; ///< arena bytes a plan without reuse would need (--stats)
  std::vector<Instr> instrs;
};

/// Where a tensor lives: a device and a persistent buffer on it.
struct Placement {
  uint32_t device = 0; ///< index in Plan::devices
  uint32_t buffer = 0; ///< buffer id on that device
  // Spelled out: CUDA translation units include this header as C++17.
  bool operator==(const Placement &o) const { return device == o.device && buffer == o.buffer; }
};

/// A named tensor visible to the user: an input, output, param, state or the loss.
struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint32_t device = 0; ///< index in Plan::devices
  uint32_t buffer = 0; ///< buffer id on that device (Persistent region)
  /// Params and states of a data-parallel plan: the same tensor on the other
  /// replicas' devices, equal to it bit for bit at every step. A runtime
  /// writes every placement (initial values, --init, --resume) and reads
  /// the first (device, buffer).
  std::vector<Placement> mirrors;
  /// A ZeRO-1 optimizer state: the tensor in shards.size() equal parts of
  /// its flat elements, zero-padded at the end (ops::shardElements), part i
  /// in the buffer shards[i] of shape [shardElements()]; (device, buffer) is
  /// shards[0]. A runtime writes the parts it hosts from the whole tensor
  /// and joins all parts to read it. Empty for a whole tensor.
  std::vector<Placement> shards;
  /// A tensor-parallel parameter or state: -1 for ZeRO-1's flat layout
  /// above; else part i of `shards` is part i of shards.size() equal parts
  /// along this axis (shape[shardAxis] / shards.size() of it), whole
  /// elsewhere, in row-major order. Such a tensor may have `mirrors`: its
  /// other data-parallel replicas' parts, replica by replica, mirrors[k]
  /// holding part k mod shards.size().
  int32_t shardAxis = -1;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  /// Every buffer that holds (part of) the tensor: its shards, or its own
  /// placement and its mirrors.
  std::vector<Placement> placements() const {
    if (!shards.empty()) {
      std::vector<Placement> all = shards;
      all.insert(all.end(), mirrors.begin(), mirrors.end());
      return all;
    }
    std::vector<Placement> all{{device, buffer}};
    all.insert(all.end(), mirrors.begin(), mirrors.end());
    return all;
  }
  /// Elements of each part of a sharded tensor (its buffers' size).
  int64_t shardElements() const {
    if (shards.empty()) return numElements();
    if (shardAxis >= 0) return numElements() / int64_t(shards.size());
    return ops::shardElements(numElements(), int64_t(shards.size()));
  }
};

/// Part i of a sharded tensor's elements: copies between the whole
/// tensor and part i (shardElements() elements), in either layout
/// (TensorRef::shards, ::shardAxis); the one place the runtimes read them.
/// Joining writes the part's elements of `whole`; extracting zeroes
/// ZeRO-1's padding.
template <bool Join, class Whole, class Part>
inline void movePart(const TensorRef &r, size_t i, Whole *whole, Part *part) {
  const int64_t e = ops::dtypeSize(r.dtype);
  if constexpr (!Join) std::memset(part, 0, size_t(r.shardElements() * e));
  ops::forEachPartRun(r.shape.data(), r.shape.size(), r.shardAxis, int64_t(r.shards.size()),
                      int64_t(i), [&](int64_t w, int64_t p, int64_t n) {
                        if constexpr (Join) std::memcpy(whole + w * e, part + p * e, size_t(n * e));
                        else std::memcpy(part + p * e, whole + w * e, size_t(n * e));
                      });
}
inline void extractPart(const TensorRef &r, size_t i, const uint8_t *whole, uint8_t *part) {
  movePart<false>(r, i, whole, part);
}
inline void joinPart(const TensorRef &r, size_t i, const uint8_t *part, uint8_t *whole) {
  movePart<true>(r, i, whole, part);
}

struct Optimizer {
  std::string kind; ///< "sgd", "adam", "adamw", or "" for a forward-only plan
  std::map<std::string, double> hyper; ///< lr, momentum, beta1, ... as used
};

/// How a pipelined plan was scheduled (docs/pipelining.md).
struct PipelineInfo {
  int64_t microbatches = 1; ///< 1: not pipelined
  std::string schedule;     ///< one of ir::kPipelineSchedules
  /// Device index of each virtual stage, in pipeline order.
  std::vector<uint32_t> stages;
  /// Zero-bubble schedules: the in-flight bound asked for (--in-flight),
  /// 0 for the schedule's own.
  int64_t inFlight = 0;
};

/// The kinds of kernel attribute values: the op contract's attribute types.
using AttrKind = ops::AttrType;

/// What the op table says of one op the plan's kernels name: its operand
/// counts and every attribute it declares, with its kind. Codegen copies it
/// from the op's record (ir/ops/), so the runtime can check instructions
/// against the op table without including ir/.
struct OpSignature {
  std::string name;
  uint32_t minInputs = 0, maxInputs = 0;
  std::vector<std::pair<std::string, AttrKind>> attrs; ///< in declaration order
};

struct Plan {
  std::string model;
  uint64_t seed = 0; ///< the seed the initial values were drawn with
  /// --precision it was compiled with (ops::kPrecisions): bf16 and fp16
  /// show in its buffers' types; tf32 lets GPU matmuls use TF32.
  std::string precision = "fp32";
  /// What the plan computes, whatever its layout (ir/ModelChecksum.h); 0:
  /// unknown (a plan built by hand), so no other plan's checkpoint resumes.
  uint64_t modelChecksum = 0;
  std::vector<DeviceProgram> devices;
  std::vector<TensorRef> inputs;
  std::vector<TensorRef> outputs;
  std::vector<TensorRef> params;
  std::vector<TensorRef> states;
  bool hasLoss = false;
  TensorRef loss; ///< valid when hasLoss
  Optimizer optimizer;
  PipelineInfo pipeline;
  /// One entry per op the kernels name, sorted by name.
  std::vector<OpSignature> ops;
  /// Initial values of params then states, in that order, as float32 /
  /// int32 bytes (4 per element).
  std::vector<std::vector<uint8_t>> initialValues;
};

/// True when some device of `plan` is a GPU ("gpu:N").
inline bool usesGpu(const Plan &plan) {
  for (const DeviceProgram &d : plan.devices)
    if (d.device.rfind("gpu:", 0) == 0) return true;
  return false;
}

/// "cpu:0, cpu:1, cpu:2": the plan's devices in order, for messages.
inline std::string deviceList(const Plan &plan) {
  std::string s;
  for (const DeviceProgram &d : plan.devices) s += (s.empty() ? "" : ", ") + d.device;
  return s;
}

} // namespace mpc::plan
