#!/usr/bin/env python3
"""Writes the mpc model JSON of a character-level GPT (GPT-2 architecture).

Pre-LN blocks, as GPT-2 and nanoGPT:
    x = wte[ids] + wpe                      (token + learned position embedding)
    x = x + attn(ln1(x));  x = x + mlp(ln2(x))     per block
    logits = ln_f(x) @ wte^T                (output layer tied to wte)
    loss = softmax_cross_entropy(logits [B*T, V], targets [B*T])
attn: one fused qkv matmul [D, 3D] + bias, q/k/v cut out with `slice`, heads
by reshape/transpose to [B, H, T, D/H], softmax(causal_mask(q k^T / sqrt(D/H))),
(dropout), times v, back to [B, T, D], output projection + bias.
mlp: D -> 4D, gelu (tanh approximation, as GPT-2), -> D.

Weights are stored [in, out] (the IR's matmul is x @ w), unlike
torch.nn.Linear's [out, in]. Parameter names follow GPT-2's
(wte, wpe, h0.ln1.g, h0.attn.qkv.w, ..., lnf.g) so checkpoints read naturally
as safetensors. GPT-2 initialisation: weights N(0, 0.02), residual output
projections N(0, 0.02 / sqrt(2 * blocks)), biases 0, layer-norm gains 1.

Placement: the embeddings on group stage0, block i on stage{i*devices//blocks},
the final layer norm, the tied output layer and the loss on the last group.
wte lives on stage0 and is also read by the last group: the compiler copies
it there and its gradient back.

--eval writes the inference variant of the same model (same parameter names,
so a training checkpoint loads with --init): no "loss" key, no optimizer, no
dropout, and the loss node listed in "outputs", so `mpc run --output
loss=FILE.npy` yields one validation loss per batch.
"""
import argparse
import json
import math
import os
import sys


def fail(msg):
    print("make_model.py: error: " + msg, file=sys.stderr)
    sys.exit(1)


class Builder:
    """Accumulates params and nodes; every node carries its device group."""

    def __init__(self):
        self.params, self.nodes = {}, []

    def param(self, name, shape, init, device, shard=None):
        self.params[name] = {"shape": shape, "init": init, "device": device}
        if shard is not None:
            self.params[name]["shard"] = shard
        return name

    def node(self, name, op, inputs, device, **attrs):
        n = {"name": name, "op": op, "inputs": inputs}
        if attrs:
            n["attrs"] = attrs
        n["device"] = device
        self.nodes.append(n)
        return name


def build(vocab, blocks, d, heads, context, batch, devices, dropout, lr, eval_mode,
          tensor_parallel=0, eps=1e-5):
    B, T, D, H, V = batch, context, d, heads, vocab
    hd = D // H
    g = Builder()
    normal = lambda std: {"normal": {"mean": 0.0, "std": std}}
    proj_std = 0.02 / math.sqrt(2 * blocks)
    p = 0.0 if eval_mode else dropout
    first, last = "stage0", "stage%d" % (devices - 1)

    def drop(name, x, dev):
        # Dropout only where it does something: p = 0 and inference plans
        # leave no node behind, so cross-checks see the plain graph.
        return g.node(name, "dropout", [x], dev, p=p) if p > 0 else x

    def layer_norm(prefix, x, dev):
        gain = g.param(prefix + ".g", [D], "ones", dev)
        bias = g.param(prefix + ".b", [D], "zeros", dev)
        return g.node(prefix, "layer_norm", [x, gain, bias], dev, eps=eps)

    # Tensor parallelism (Megatron-LM): "column" layers split their weight's
    # output axis and their bias, "row" layers their weight's input axis;
    # the row layer's bias is added after the sum, whole.
    split = tensor_parallel > 1

    def linear(prefix, x, n_in, n_out, std, dev, parallel=None):
        w = g.param(prefix + ".w", [n_in, n_out], normal(std), dev,
                    shard={"column": 1, "row": 0}.get(parallel) if split else None)
        b = g.param(prefix + ".b", [n_out], "zeros", dev,
                    shard=0 if split and parallel == "column" else None)
        y = g.node(prefix + ".mm", "matmul", [x, w], dev)
        return g.node(prefix + ".add", "add", [y, b], dev)

    def heads(prefix, x, dev):
        r = g.node(prefix + ".split", "reshape", [x], dev, shape=[B, T, H, hd])
        return g.node(prefix + ".heads", "transpose", [r], dev, perm=[0, 2, 1, 3])

    def heads_of(prefix, qkv, i, dev):
        # [B,T,3D] -> slice i of q/k/v [B,T,D] -> [B,T,H,hd] -> [B,H,T,hd]
        s = g.node(prefix, "slice", [qkv], dev, axis=2, start=i * D, end=(i + 1) * D)
        r = g.node(prefix + ".split", "reshape", [s], dev, shape=[B, T, H, hd])
        return g.node(prefix + ".heads", "transpose", [r], dev, perm=[0, 2, 1, 3])

    # Embeddings, on the first group.
    g.param("wte", [V, D], normal(0.02), first)
    g.param("wpe", [T, D], normal(0.02), first)
    tok = g.node("tok", "embedding", ["x", "wte"], first)
    x = g.node("emb", "add", [tok, "wpe"], first)  # wpe [T,D] broadcasts over B
    x = drop("emb.drop", x, first)

    for i in range(blocks):
        dev = "stage%d" % (i * devices // blocks)
        h = "h%d" % i
        a = layer_norm(h + ".ln1", x, dev)
        if tensor_parallel:
            # q, k and v of their own: each splits by heads.
            q, k, v = (heads(h + ".attn." + n, linear(h + ".attn." + n, a, D, D, 0.02, dev,
                                                      "column"), dev) for n in "qkv")
        else:
            qkv = linear(h + ".attn.qkv", a, D, 3 * D, 0.02, dev)
            q = heads_of(h + ".attn.q", qkv, 0, dev)
            k = heads_of(h + ".attn.k", qkv, 1, dev)
            v = heads_of(h + ".attn.v", qkv, 2, dev)
        s = g.node(h + ".attn.scores", "matmul", [q, k], dev, transpose_b=True)  # [B,H,T,T]
        s = g.node(h + ".attn.scaled", "scale", [s], dev, value=1.0 / math.sqrt(hd))
        s = g.node(h + ".attn.masked", "causal_mask", [s], dev, value=-1e9)
        s = g.node(h + ".attn.probs", "softmax", [s], dev, axis=-1)
        s = drop(h + ".attn.probs.drop", s, dev)
        c = g.node(h + ".attn.ctx", "matmul", [s, v], dev)  # [B,H,T,hd]
        c = g.node(h + ".attn.ctx.t", "transpose", [c], dev, perm=[0, 2, 1, 3])
        c = g.node(h + ".attn.ctx.merge", "reshape", [c], dev, shape=[B, T, D])
        c = linear(h + ".attn.proj", c, D, D, proj_std, dev, "row")
        c = drop(h + ".attn.drop", c, dev)
        x = g.node(h + ".res1", "add", [x, c], dev)
        m = layer_norm(h + ".ln2", x, dev)
        m = linear(h + ".mlp.fc", m, D, 4 * D, 0.02, dev, "column")
        m = g.node(h + ".mlp.gelu", "gelu", [m], dev, approximate="tanh")
        m = linear(h + ".mlp.proj", m, 4 * D, D, proj_std, dev, "row")
        m = drop(h + ".mlp.drop", m, dev)
        x = g.node(h + ".res2", "add", [x, m], dev)

    x = layer_norm("lnf", x, last)
    logits = g.node("logits", "matmul", [x, "wte"], last, transpose_b=True)  # [B,T,V]
    # Logits [B,T,V] against labels [B,T]: the mean over all B*T positions,
    # with nothing reshaped across the batch axis (so it pipelines).
    g.node("loss", "softmax_cross_entropy", [logits, "y"], last)

    model = {
        "mpc": 1,
        "name": "gpt",
        "inputs": {"x": {"shape": [B, T], "dtype": "i32", "device": first},
                   "y": {"shape": [B, T], "dtype": "i32", "device": last}},
        "params": g.params,
        "nodes": g.nodes,
    }
    if eval_mode:
        model["outputs"] = ["loss"]
    else:
        model["loss"] = "loss"
        model["optimizer"] = {"adam": {"lr": lr}}
    return model


def main():
    ap = argparse.ArgumentParser(
        description="Write the mpc model JSON of a character-level GPT "
                    "(pre-LN GPT-2 blocks, tied output layer, one device group per block range).")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--vocab", type=int, metavar="V", help="vocabulary size")
    src.add_argument("--data", metavar="DIR",
                     help="prepare_data.py output: vocabulary size from vocab.json, "
                          "default context from stats.json")
    ap.add_argument("--blocks", type=int, default=4, help="transformer blocks (default 4)")
    ap.add_argument("--d-model", type=int, default=128, help="embedding width D (default 128)")
    ap.add_argument("--heads", type=int, default=4, help="attention heads; must divide D (default 4)")
    ap.add_argument("--context", type=int,
                    help="sequence length T (default: the data's, else 64)")
    ap.add_argument("--batch", type=int, default=16, help="sequences per step B (default 16)")
    ap.add_argument("--devices", type=int,
                    help="device groups stage0..stageN-1, 1 to blocks (default: blocks)")
    ap.add_argument("--dropout", type=float, default=0.1,
                    help="dropout probability, training variant only (default 0.1)")
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    ap.add_argument("--tensor-parallel", type=int, default=0, metavar="T",
                    help="q, k and v as projections of their own; with T > 1 the blocks' weights "
                         "declare Megatron-LM's splits (\"shard\") over groups mapped to T "
                         "devices each (--map stage0=cpu:0+cpu:1,...); T = 1 is the same model "
                         "unsplit (default 0: one fused qkv projection)")
    ap.add_argument("--eval", action="store_true",
                    help="write the inference variant: no loss key, no optimizer, no dropout, "
                         "the loss node as an output")
    ap.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    args = ap.parse_args()

    vocab, context = args.vocab, args.context
    if args.data:
        try:
            with open(os.path.join(args.data, "vocab.json")) as f:
                vocab = int(json.load(f)["vocab_size"])
            if context is None:
                with open(os.path.join(args.data, "stats.json")) as f:
                    context = int(json.load(f)["context"])
        except (OSError, ValueError, KeyError) as e:
            fail("%s: cannot read the data description (run prepare_data.py first): %s"
                 % (args.data, e))
    context = 64 if context is None else context
    devices = args.blocks if args.devices is None else args.devices
    for name, value in (("--vocab", vocab), ("--blocks", args.blocks), ("--d-model", args.d_model),
                        ("--heads", args.heads), ("--context", context), ("--batch", args.batch)):
        if value < 1:
            fail("%s must be at least 1, got %d" % (name, value))
    if args.d_model % args.heads:
        fail("--heads %d does not divide --d-model %d" % (args.heads, args.d_model))
    if not 1 <= devices <= args.blocks:
        fail("--devices must be between 1 and --blocks (%d), got %d" % (args.blocks, devices))
    if args.tensor_parallel < 0:
        fail("--tensor-parallel must be at least 0, got %d" % args.tensor_parallel)
    if args.tensor_parallel > 1 and (args.heads % args.tensor_parallel
                                     or 4 * args.d_model % args.tensor_parallel):
        fail("--tensor-parallel %d must divide --heads (%d) and the MLP width 4 x --d-model (%d)"
             % (args.tensor_parallel, args.heads, 4 * args.d_model))
    if not 0 <= args.dropout < 1:
        fail("--dropout must be in [0, 1), got %g" % args.dropout)
    if args.lr < 0:
        fail("--lr must be >= 0, got %g" % args.lr)

    model = build(vocab, args.blocks, args.d_model, args.heads, context, args.batch, devices,
                  args.dropout, args.lr, args.eval, args.tensor_parallel)
    # One param or node per line: diffs and greps stay readable.
    lines = ['{"mpc": 1, "name": %s,' % json.dumps(model["name"]),
             ' "inputs": %s,' % json.dumps(model["inputs"]), ' "params": {']
    items = list(model["params"].items())
    lines += ['  %s: %s%s' % (json.dumps(k), json.dumps(v), "," if i + 1 < len(items) else "")
              for i, (k, v) in enumerate(items)]
    lines += [' },', ' "nodes": [']
    lines += ['  %s%s' % (json.dumps(n), "," if i + 1 < len(model["nodes"]) else "")
              for i, n in enumerate(model["nodes"])]
    lines.append(' ],')
    tail = [' %s: %s' % (json.dumps(k), json.dumps(model[k]))
            for k in ("loss", "outputs", "optimizer") if k in model]
    lines.append(",\n".join(tail) + "\n}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == model
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
