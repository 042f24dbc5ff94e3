#!/usr/bin/env python3
"""Convert a PipeDream layer profile (graph.txt) into a chainplan.chain/v1 file.

Usage:
    python3 examples/tools/pipedream2chain.py PROFILE.graph.txt [-o OUT.json] [--name NAME]
                                              [--check-only]

Standard library only. The profiles were published with PipeDream
(github.com/msr-fiddle/pipedream, MIT licence, see examples/LICENSE.pipedream.txt); a copy
lives in /work/shared/data/pipedream (see examples/README.md). One line per node or edge:

    nodeN -- <module> -- forward_compute_time=<ms>, backward_compute_time=<ms>,
             activation_size=<bytes>, parameter_size=<bytes>
    nodeA -- nodeB            (nodeB consumes nodeA's output)

What the converter does (rotor thesis, specs/rotor.md 1.2-1.4):

1. Reads the nodes and edges, removes the `Input` node (its activation_size is the model
   input a_0 = input_bytes; its "forward time" is the data loader and is not model work).
2. If the graph has more than one sink (Inception v3's auxiliary classifier), keeps only
   the ancestors of the main output (the last sink in topological order) and says so on
   stderr: the same model as torchvision's `aux_logits=False`. A chain has one output.
3. Orders the nodes topologically (Kahn's algorithm, ties broken by node number, so the
   output is deterministic).
4. Finds the legal cut positions: a stage boundary may follow position i only if every
   edge that crosses it starts at node i. Then node i's output is the only tensor alive
   across the boundary, which is what a chain needs (a_l is the only input of stage l+1).
   Edges into `Size` nodes do not count: Size reads only the tensor's shape, which any
   tensor of the batch provides, so no data crosses the boundary (DenseNet's classifier
   reads `features.size(0)` from the tensor before its final in-place ReLU).
   Positions inside a residual block (the skip connection crosses them), inside a
   DenseNet layer (its input goes to the Concat) or inside an Inception module (the
   branches run in parallel) are not legal. This is the thesis's "grouping each
   non-linear part of the graph in a virtual layer" (spec 1.3). Any topological order
   gives the same legal cuts when the graph has one source and one sink: a node that
   every path goes through has all other nodes either before it (ancestors) or after
   it (descendants).
5. The segments between legal cuts are then grouped into stages (GROUPING below).

GROUPING. A segment made only of "follower" operations joins the stage before it; any
other segment starts a new stage. Followers are:

  * in-place operations (`ReLU(inplace)`, `Add(inplace)`): they overwrite their input.
    A boundary before one would have to keep the producer's output a_l intact while the
    next stage destroys it; in PyTorch that boundary does not exist without an extra copy.
    The producer and the in-place op must be one stage.
  * BatchNorm2d after a convolution: memory-bound and cheap (a few % of the conv time).
    Cutting Conv | BN | ReLU would give checkpoint candidates of exactly the size of the
    group's own output (BN and the in-place ReLU keep the conv's shape), so it offers no
    smaller tensor to keep and only a finer recomputation of cheap operations, at the
    price of a 2-3x longer chain (the DP is cubic in the length). It also matches the
    torchvision module structure the thesis benchmarks used (nn.Sequential children).
  * any segment that starts with an in-place op, for the same reason;
  * Dropout (its mask belongs to the layer before it; zero time in these profiles),
    View and Size (aliasing / a Python int, zero time).

So VGG-16 becomes Conv+ReLU, ..., MaxPool, ..., MaxPool+Size+View, Linear+ReLU+Dropout,
...; a ResNet bottleneck (Conv,BN,ReLU x3, downsample, Add) + its final ReLU is one stage;
a DenseNet layer (BN,ReLU,Conv,BN,ReLU,Conv,Concat) is one stage, and so is an Inception
module. MaxPool/AvgPool stay stages of their own: they shrink the tensor, so their output
is a good checkpoint.

PER STAGE:
  fwd_time, bwd_time  sums of the nodes' times, ms -> seconds;
  out_bytes           activation_size of the stage's last node (the only node with a
                      consumer outside the stage, checked);
  saved_bytes         sum of the activation sizes of the stage's nodes, except those that
                      allocate no new storage: in-place ops (they write into their input),
                      View (a view of its input) and Size (a Python int); at least
                      out_bytes. The stage input a_{l-1} is not included (spec 1.2).
                      This is the recorded outputs only: PipeDream's profile has no
                      autograd-internal buffers (max-pool indices, BN mean/invstd), so
                      saved_bytes is a slight underestimate of a real F_all.
  fwd_tmp_bytes, bwd_tmp_bytes   0: the source has no temporary/workspace sizes.
  param_bytes         sum of parameter_size.
  loss                fwd/bwd time 0 and no temporary memory: the profiles do not include
                      the loss; cross-entropy over (batch x 1000) logits takes microseconds
                      against hundreds of milliseconds for the model, and needs no buffer
                      beyond the logits and their gradient, which rotor already counts
                      (2 a_L at the loss step, spec 1.2).

BATCH SIZE. The profiles do not state it; it is inferred from the last Linear layer
(activation_size = batch x out_features x 4 B) and cross-checked: the Input node must be
batch x 3 x H x H x 4 B for H = 224 or 299, every Conv2d output must be batch x C_out x
H' x W' x 4 B with H' = W' an integer, and every activation (except Size) must be a
multiple of 4 x batch. The sizes are fp32 tensors; e.g. VGG-16 at batch 128:
conv1_1 -> 128 x 64 x 224 x 224 x 4 B = 1644167168 B, exactly the profile's number.
(The batch differs between models: 128 for VGG-16 and the ResNets, 64 for DenseNet-121,
256 for AlexNet.)
"""

import argparse
import json
import math
import re
import sys

from pipedream_graph import ConversionError, ancestors, parse, topo_order

FOLLOWER_OPS = {"ReLU", "BatchNorm2d", "Dropout", "View", "Size"}
FP32 = 4


def conv_out_channels(desc):
    m = re.match(r"Conv2d\((\d+), (\d+),", desc)
    return int(m.group(2)) if m else None


def linear_out_features(desc):
    m = re.search(r"out_features=(\d+)", desc)
    return int(m.group(1)) if m else None


def infer_batch(nodes, order, input_node, log):
    """Infer the batch size and check that all sizes look like fp32 tensors."""
    linears = [n for n in order if nodes[n].op == "Linear"]
    if not linears:
        raise ConversionError("no Linear layer to infer the batch size from")
    last = nodes[linears[-1]]
    feats = linear_out_features(last.desc)
    batch = last.act / (feats * FP32)
    if batch != int(batch) or batch < 1:
        raise ConversionError(
            f"last Linear ({last.id}) activation {last.act:.0f} B is not "
            f"batch x {feats} x 4 B for an integer batch"
        )
    batch = int(batch)
    # the input: batch x 3 x H x H fp32
    per_sample = input_node.act / (batch * 3 * FP32)
    side = math.isqrt(int(per_sample)) if per_sample == int(per_sample) else -1
    if side * side != per_sample:
        raise ConversionError(f"input {input_node.act:.0f} B is not {batch} x 3 x H x H x 4 B")
    # every conv output must be batch x C x H' x H' fp32; every size a multiple of 4*batch
    for n in order:
        node = nodes[n]
        if node.op == "Size":
            continue
        if node.act % (FP32 * batch) != 0:
            raise ConversionError(
                f"{n} ({node.op}) activation {node.act:.0f} B is not a "
                f"multiple of 4 x batch = {4 * batch}"
            )
        c = conv_out_channels(node.desc)
        if c is not None:
            hw = node.act / (batch * c * FP32)
            if hw != int(hw) or math.isqrt(int(hw)) ** 2 != int(hw):
                raise ConversionError(
                    f"{n} Conv2d activation {node.act:.0f} B is not {batch} x {c} x H x H x 4 B"
                )
    log(
        f"batch {batch} inferred from {last.id} ({last.desc.split('(')[0]}, {feats} outputs, "
        f"{last.act:.0f} B); input {batch} x 3 x {side} x {side} fp32 = {input_node.act:.0f} B; "
        f"all activation sizes are multiples of 4 x {batch} and conv outputs are square fp32 maps"
    )
    return batch, side


def op_summary(group_nodes):
    counts, seen = {}, []
    for node in group_nodes:
        op = node.op.lower()
        if op not in counts:
            counts[op] = 0
            seen.append(op)
        counts[op] += 1
    return "+".join(op if counts[op] == 1 else f"{op}x{counts[op]}" for op in seen)


def convert(path, name, log):
    nodes, edges = parse(path)
    succ = {n: [] for n in nodes}
    pred = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
        pred[b].append(a)

    inputs = [n for n in nodes if nodes[n].op.startswith("Input")]
    if len(inputs) != 1 or nodes[inputs[0]].op != "Input":
        raise ConversionError(
            f"expected exactly one 'Input' node, found {len(inputs)} "
            f"({', '.join(sorted(inputs))}); multi-input models (gnmt) "
            "are not chains"
        )
    inp = inputs[0]
    if pred[inp]:
        raise ConversionError(f"the Input node {inp} has predecessors")

    order = topo_order(nodes, succ, pred)
    sources = [n for n in order if not pred[n]]
    if sources != [inp]:
        raise ConversionError(f"nodes without predecessors other than the Input: {sources}")
    sinks = [n for n in order if not succ[n]]
    main_sink = sinks[-1]
    if len(sinks) > 1:
        keep = ancestors(main_sink, pred)
        dropped = [n for n in order if n not in keep]
        log(
            f"{len(sinks)} outputs ({', '.join(sinks)}): keeping the ancestors of {main_sink}, "
            f"dropping {len(dropped)} nodes of the other output branch(es) "
            f"({', '.join(sorted({nodes[d].op for d in dropped}))}), as with aux_logits=False"
        )
        order = [n for n in order if n in keep]
        for n in list(succ):
            succ[n] = [s for s in succ[n] if s in keep]
        for n in list(pred):
            pred[n] = [p for p in pred[n] if p in keep]

    batch, side = infer_batch(nodes, order, nodes[inp], log)

    # order without the Input node; a boundary after the Input is always legal if the
    # input has only one consumer position, which the cut rule checks like any other.
    pos = {n: i for i, n in enumerate(order)}
    # legal[i]: a boundary may follow order[i]
    # max_reach[i] = the farthest consumer position of any node at or before i, except i
    legal = [False] * len(order)
    reach_before = -1  # max position of a consumer of nodes before i
    for i, n in enumerate(order):
        if reach_before <= i:
            legal[i] = True
        for s in succ[n]:
            if nodes[s].op == "Size":
                continue  # reads only the shape (metadata), not the tensor: no data crosses
            reach_before = max(reach_before, pos[s])
    # legal[i] now says: no edge from a node before i goes past i, i.e. every edge crossing
    # the boundary after i starts at i.
    if not legal[0]:
        raise ConversionError("internal: the Input must be a legal boundary")

    segments = []
    start = 1
    for i in range(1, len(order)):
        if legal[i]:
            segments.append(order[start : i + 1])
            start = i + 1
    if start != len(order):
        raise ConversionError("internal: the last node must end a segment")

    groups = []
    for seg in segments:
        follower = all(nodes[n].op in FOLLOWER_OPS or nodes[n].inplace for n in seg)
        # an in-place op can never start a stage: it would overwrite the stage input
        if (follower or nodes[seg[0]].inplace) and groups:
            groups[-1].extend(seg)
        else:
            groups.append(list(seg))

    stages = []
    ms = 1e-3
    for k, grp in enumerate(groups, 1):
        gn = [nodes[n] for n in grp]
        members = set(grp)
        # only the last node may feed nodes outside the stage
        for n in grp[:-1]:
            outside = [s for s in succ[n] if s not in members and nodes[s].op != "Size"]
            if outside:
                raise ConversionError(f"internal: {n} in stage {k} feeds {outside} outside it")
        out_bytes = int(gn[-1].act)
        saved = int(sum(x.act for x in gn if x.allocates))
        saved = max(saved, out_bytes)
        kind = op_summary(gn)
        if any(x.op == "Add" for x in gn):
            kind = "residual(" + kind + ")"
        elif any(x.op == "Concat" for x in gn):
            kind = "concat(" + kind + ")"
        stages.append(
            {
                "name": f"{k:02d}:{kind}",
                "fwd_time": round(sum(x.fwd_ms for x in gn) * ms, 9),
                "bwd_time": round(sum(x.bwd_ms for x in gn) * ms, 9),
                "out_bytes": out_bytes,
                "saved_bytes": saved,
                "fwd_tmp_bytes": 0,
                "bwd_tmp_bytes": 0,
                "param_bytes": int(sum(x.params for x in gn)),
            }
        )

    chain = {
        "format": "chainplan.chain/v1",
        "input_bytes": int(nodes[inp].act),
        "stages": stages,
        "loss": {"fwd_time": 0.0, "bwd_time": 0.0, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0},
    }
    store_all = int(nodes[inp].act) + sum(s["saved_bytes"] for s in stages)
    log(
        f"{name}: {len(order) - 1} nodes -> {len(stages)} stages "
        f"({sum(1 for g in groups if len(g) > 1)} grouped); input {int(nodes[inp].act)} B; "
        f"sum of saved_bytes + input = {store_all / 2**30:.2f} GiB; "
        f"fwd {sum(s['fwd_time'] for s in stages) * 1e3:.1f} ms, "
        f"bwd {sum(s['bwd_time'] for s in stages) * 1e3:.1f} ms"
    )
    return chain


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="PipeDream graph.txt profile")
    ap.add_argument("-o", "--output", help="output chain file (default: stdout)")
    ap.add_argument("--name", help="model name for messages (default: from the file name)")
    ap.add_argument("--check-only", action="store_true", help="convert and report, write nothing")
    args = ap.parse_args(argv)
    name = args.name or re.sub(r"\.graph\.txt$|\.txt$", "", args.profile.split("/")[-1])

    def log(msg):
        print(f"pipedream2chain: {msg}", file=sys.stderr)

    try:
        chain = convert(args.profile, name, log)
    except (ConversionError, OSError) as e:
        print(f"pipedream2chain: {args.profile}: {e}", file=sys.stderr)
        return 2
    if args.check_only:
        return 0
    text = json.dumps(chain, indent=1) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
