//===- ir/Graph.h - the mpc graph IR ------------------------------------===//
//
// A graph is a list of nodes in creation order. Every node produces exactly
// one value (SSA: the node *is* its value), named uniquely with `name`.
// Leaves are model inputs (fed per step), parameters (trained, initialised
// from an InitSpec) and optimizer state (persistent, created by the
// optimizer pass). Everything else is an op node whose meaning is its
// OpInfo record.
//
// Determinism: `topoOrder()` breaks ties by creation index, and generated
// names are derived from their sources, so printing, lowering and every
// other output are stable run to run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Attribute.h"
#include "ir/GradientMap.h"
#include "ir/NameTable.h"
#include "ir/OpInfo.h"
#include "ir/Type.h"
#include "ops/Layout.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mpc::ir {

enum class NodeKind : uint8_t { Input, Param, State, Op };

const char *nodeKindName(NodeKind k); ///< "input", "param", "state", "op"

/// How a parameter or state tensor gets its initial value (see ir/Init.h).
struct InitSpec {
  enum Kind : uint8_t { Constant, Zeros, Ones, Uniform, Normal, Xavier };
  Kind kind = Zeros;
  double a = 0.0; ///< constant: value; uniform: low; normal: mean; xavier: magnitude
  double b = 0.0; ///< uniform: high; normal: std
  std::string str() const; ///< "xavier(2.24)", "constant(0.5)", "zeros"
  bool operator==(const InitSpec &) const = default;
};

/// The default of a setting the optimizer passes to its update op: the op's
/// own (its schema), so that the two cannot disagree.
template <class T> T updateOpDefault(OpKind update, const char *attr) {
  return std::get<T>(ops::schema(update).defaultOf(attr));
}

/// The model's optimizer, with torch.optim semantics (docs/passes.md). The
/// learning rates and AdamW's weight decay are the model's defaults (the
/// reader's); the other settings default to the update ops'.
struct OptimizerSpec {
  std::string kind = "sgd"; ///< "sgd", "adam" or "adamw"
  double lr = 0.01;
  double momentum = updateOpDefault<double>(OpKind::SgdUpdate, "momentum");
  double dampening = updateOpDefault<double>(OpKind::SgdUpdate, "dampening");
  bool nesterov = updateOpDefault<bool>(OpKind::SgdUpdate, "nesterov");
  double weightDecay = updateOpDefault<double>(OpKind::SgdUpdate, "weight_decay");
  double beta1 = updateOpDefault<double>(OpKind::AdamUpdate, "beta1");
  double beta2 = updateOpDefault<double>(OpKind::AdamUpdate, "beta2");
  double eps = updateOpDefault<double>(OpKind::AdamUpdate, "eps");
  bool operator==(const OptimizerSpec &) const = default;
};

/// Pipeline parallelism (docs/pipelining.md): the step's batch is split into
/// `microbatches` equal parts along axis 0, run through the stages in the
/// order `schedule` gives.
struct PipelineSpec {
  int64_t microbatches = 1;
  std::string schedule = "1f1b"; ///< one of kPipelineSchedules
  /// Zero-bubble schedules: the most micro-batches a stage may hold open
  /// (forward begun, weight gradient not yet), raising the schedule's own
  /// bound (p for zb-h1, 2p - 1 for zb-h2) to trade memory for idle time;
  /// 0: the schedule's own.
  int64_t inFlight = 0;
  bool operator==(const PipelineSpec &) const = default;
};

/// The most micro-batches a step may be split into (the model's "pipeline"
/// and `--microbatches` alike). Compile time still grows faster than
/// linearly in M (inserting copies and ordering a pipelined step scan the
/// graph per micro-batch): at this bound a 3-stage MLP on a 65,536-row
/// batch compiles in about 6 s, and at 16,384 it took minutes. Pipelines
/// use tens to hundreds of micro-batches; more only shrinks the GEMMs.
inline constexpr int64_t kMaxMicrobatches = 4096;
/// Why, as messages about the bound say it.
inline constexpr const char *kMaxMicrobatchesReason =
    "beyond it compile time grows faster than linearly, and smaller micro-batches only shrink "
    "the GEMMs";

/// Data parallelism (docs/parallelism.md): `replicas` copies of the placed
/// model, replica r on the model's devices shifted by r times their number,
/// each taking an equal share of every input's batch; each parameter's
/// gradient is all-reduced across the replicas before its update.
/// The most replicas a model may have: a collective's group is at most this
/// large (ops::OpSchema::kMaxVariadicArity).
inline constexpr int64_t kMaxReplicas = 64;

struct DataParallelSpec {
  int64_t replicas = 1;
  /// 1: ZeRO stage 1, the optimizer state sharded across the replicas.
  int zero = 0;
  /// Gradients are all-reduced in buckets of up to this many bytes, in the
  /// order backward produces them (PyTorch DDP's default, 25 MiB).
  int64_t bucketBytes = int64_t(25) << 20;
  bool operator==(const DataParallelSpec &) const = default;
};

/// The schedules PipelineSpec::schedule may name, in documentation order
/// (docs/pipelining.md; codegen/PipelineSchedule.cpp builds them).
inline const char *const kPipelineSchedules[] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                                                 "zb-h2"};
/// "gpipe, 1f1b, interleaved-1f1b, zb-h1 or zb-h2", for messages and help.
std::string pipelineScheduleList();
/// zb-h1 and zb-h2: the schedules that split a backward into B and W and
/// bound the micro-batches a stage holds open (PipelineSpec::inFlight).
inline bool isZeroBubbleSchedule(std::string_view schedule) { return schedule.starts_with("zb-"); }

/// Stage invariants a graph declares; passes set them as they establish them
/// and the verifier checks what is claimed.
enum GraphStage : unsigned {
  kShaped = 1u << 0,         ///< every node has its inferred type
  kPlaced = 1u << 1,         ///< every node has a concrete device
  kCopiesExplicit = 1u << 2, ///< cross-device uses only through copy
  kDifferentiated = 1u << 3, ///< gradients of all trainable params exist
  kOptimized = 1u << 4,      ///< update ops and optimizer state exist
  kAutocast = 1u << 5,       ///< --precision=bf16|fp16 types and casts (passes/Autocast.cpp)
};

struct Node {
  int id = 0; ///< creation index; ties in topological order break on it
  std::string name;
  NodeKind kind = NodeKind::Op;
  OpKind op = OpKind::Add; ///< meaningful for NodeKind::Op only
  std::vector<Node *> inputs;
  AttrMap attrs;
  TensorType type;
  /// "" before placement; a group name or a concrete device ("cpu:0",
  /// "gpu:1") as written by the user; concrete after `place`.
  std::string device;
  std::optional<InitSpec> init; ///< Param and State
  /// Param: factors of the optimizer's learning rate and weight decay for
  /// this parameter (MXNet's lr_mult, wd_mult); optimize-step applies them.
  double lrMult = 1.0, wdMult = 1.0;
  /// Where the node came from in the model file ("/nodes/3", "/params/w0");
  /// empty for nodes created by passes. Used in diagnostics.
  std::string jsonPath;
  /// For nodes created by autodiff: the forward node whose gradient they
  /// compute (and whose device they share). For State: its parameter.
  std::string origin;
  bool backward = false; ///< created by autodiff
  /// Param and State of a data-parallel replica r > 0 (passes/BatchSplit.cpp):
  /// the tensor of replica 0 it mirrors, which it equals bit for bit at
  /// every step; lowering makes it a placement of that tensor
  /// (plan::TensorRef::mirrors), not a tensor of its own. "" otherwise.
  std::string mirrorOf;
  /// State of a ZeRO-1 optimizer (passes/ShardOptimizerState.cpp): part
  /// `index` of `count` of the tensor `of` (of type f32 `shape`), in the
  /// layout of ops::shardElements: flattened, zero-padded, equal parts.
  /// Lowering makes it a placement of that tensor (plan::TensorRef::shards),
  /// so checkpoints hold `of` whole. The tensor itself is no node.
  /// A tensor-parallel parameter's part (passes/TensorParallel.cpp) is
  /// part `index` of `count` equal parts along axis `axis` instead.
  struct ShardOf {
    std::string of;
    int64_t index = 0, count = 0;
    Shape shape;
    int64_t axis = -1; ///< -1: ZeRO-1's flat layout; else the split axis
    bool operator==(const ShardOf &) const = default;
  };
  std::optional<ShardOf> shardOf;
  /// Input and Param of a tensor-parallel group ("shard": D in the model):
  /// split along axis D into equal parts over the group's devices, in
  /// order; nullopt: replicated on every device of the group.
  std::optional<int64_t> shard;
  /// Set by tensor-parallel (passes/TensorParallel.cpp): this node is the
  /// part on device `index` of `size` of the logical value `of`, in
  /// `layout` (ops/Layout.h); its type is that part's.
  struct Spmd {
    std::string of;
    int64_t index = 0, size = 0;
    ops::Layout layout;
    bool operator==(const Spmd &) const = default;
  };
  std::optional<Spmd> spmd;
  /// Set by the microbatch pass: the micro-batch whose rows this node holds
  /// (its replica index); -1 for nodes shared by every micro-batch.
  int microbatch = -1;
  /// Kept by the graph's name table (ir/NameTable.h): the hash of the name
  /// the node is registered under, 0 while it is not registered. Lets the
  /// verifier check every node's registration in one pass over the nodes.
  uint64_t registeredHash = 0;

  bool isOp() const { return kind == NodeKind::Op; }
  bool isOp(OpKind k) const { return kind == NodeKind::Op && op == k; }
  bool isLeaf() const { return kind != NodeKind::Op; }
  /// Whether the node is the tensor a plan names (plan::TensorRef): not a
  /// mirror, and not a shard other than the first.
  bool namesTensor() const { return mirrorOf.empty() && (!shardOf || shardOf->index == 0); }
  const OpInfo &info() const; ///< only for op nodes
  /// A copy from another device: a send there and a receive here once
  /// lowered (a copy within one device is a local kernel).
  bool isTransfer() const {
    return kind == NodeKind::Op && op == OpKind::Copy && inputs.size() == 1 &&
           inputs[0]->device != device;
  }
  /// "'h1' (matmul)" or "'w0' (param)": how diagnostics name a node.
  std::string describe() const;
  /// Where diagnostics point: its JSON pointer ("/nodes/3") when it came from
  /// the model file, else its quoted name ("'h1.grad'").
  std::string where() const;
};

class Graph {
public:
  Graph() = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  std::string name;
  std::string sourceFile; ///< the model file, for diagnostics
  std::vector<std::string> outputs;
  std::string loss; ///< "" for a forward-only model
  std::optional<OptimizerSpec> optimizer;
  PipelineSpec pipeline;
  DataParallelSpec dataParallel;
  /// The model's "precision" (ops::kPrecisions; docs/precision.md).
  std::string precision = "fp32";
  /// The model's "groups": a device group mapped to several devices, which
  /// all run its nodes (tensor parallelism, docs/parallelism.md). --map
  /// entries take precedence.
  std::map<std::string, std::vector<std::string>> groups;
  /// What the model computes, whatever its layout (ir/ModelChecksum.h):
  /// taken by compiler::runPasses before any pass; 0 until then.
  uint64_t modelChecksum = 0;
  /// Filled by autodiff: parameter name -> name of its gradient value.
  GradientMap gradients;
  unsigned stages = 0; ///< GraphStage flags

  Node *addInput(const std::string &name, TensorType type);
  Node *addParam(const std::string &name, TensorType type, InitSpec init);
  Node *addState(const std::string &name, TensorType type, InitSpec init,
                 const std::string &param);
  /// Adds an op node with a given type (callers that want the shape rule
  /// applied use Builder).
  Node *addOp(const std::string &name, OpKind op, std::vector<Node *> inputs,
              AttrMap attrs, TensorType type);

  Node *find(const std::string &name) const;
  /// Whether every node is registered under its own name for find() and
  /// nothing else is: one pass over the registry, not a lookup per node.
  bool namesRegistered() const;
  /// Whether `n` is a node of this graph (false for nullptr), in O(1).
  bool contains(const Node *n) const {
    return n && n->id >= 0 && size_t(n->id) < byId_.size() && byId_[size_t(n->id)] == n;
  }
  /// Every node's id is below this: the size of an array indexed by id,
  /// which passes use instead of hash maps keyed by node.
  size_t idBound() const { return byId_.size(); }
  /// Nodes in creation order.
  const std::vector<std::unique_ptr<Node>> &nodes() const { return nodes_; }
  /// Topological order, ties broken by creation index. Throws RuleError
  /// naming a node on the cycle if there is one.
  std::vector<Node *> topoOrder() const;
  /// Op nodes that use `n`, in creation order (a node using `n` twice
  /// appears once). Scans the whole graph: a pass that needs the users of
  /// many nodes takes userMap() once instead.
  std::vector<Node *> users(const Node *n) const;
  /// users() of every node at once, in one scan of the graph; nodes nobody
  /// uses have no entry.
  std::unordered_map<const Node *, std::vector<Node *>> userMap() const;
  /// Replaces every use of `from` as an operand by `to`, and `from` among
  /// the outputs and the loss.
  void replaceAllUses(Node *from, Node *to);
  /// Gives `n` the unused name `name`, updating the outputs, the loss and
  /// the gradients map that referred to it by its old name.
  void rename(Node *n, const std::string &name);
  /// Removes `n`; it must have no users. Scans the whole graph: a pass that
  /// removes many nodes collects them for eraseAll().
  void erase(Node *n);
  /// Removes every node of `dead` in one scan; no node left may use one.
  void eraseAll(const std::unordered_set<const Node *> &dead);
  /// `base` if no node has that name, else base.1, base.2, ...
  std::string uniqueName(const std::string &base) const;
  /// A deep copy with the same names, ids and flags.
  std::unique_ptr<Graph> clone() const;

  bool has(GraphStage s) const { return (stages & s) != 0; }

private:
  Node *add(std::unique_ptr<Node> node);
  /// Lowers the suffix floor of `name`'s base when `name` is "base.N".
  void nameFreed(const std::string &name);
  std::vector<std::unique_ptr<Node>> nodes_;
  /// Never iterated (outputs follow nodes_), so hashed: find() runs for
  /// every operand a pass resolves and every check the verifier makes.
  NameTable byName_;
  /// Node by creation id; nullptr for erased ids.
  std::vector<Node *> byId_;
  int nextId_ = 0;
  /// uniqueName's floor per base: every suffix below it is taken. Names are
  /// freed only by erase, eraseAll and rename, which lower it (nameFreed).
  mutable std::unordered_map<std::string, int> suffixFloor_;
};

} // namespace mpc::ir
