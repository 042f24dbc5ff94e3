#!/usr/bin/env python3
"""Write an analytic chainplan.chain/v1 file for a GPT-2-like decoder-only Transformer.

Usage:
    python3 examples/tools/transformer_chain.py [-o examples/gpt2-small.json]
        [--batch 8] [--seq 1024] [--hidden 768] [--heads 12] [--layers 12]
        [--vocab 50257] [--tflops 100] [--bandwidth 2.0]

Standard library only. Nothing is measured: every number is a formula of the model shape,
so the chain is a reproducible, hardware-free example (defaults: GPT-2 small, batch 8,
sequence 1024, fp32). Chain: 1 embedding stage, one stage per decoder layer, 1 stage for
the final layer norm + LM head, then the cross-entropy loss. Notation: b batch, s sequence,
h hidden, a heads, V vocabulary, all tensors fp32 (4 B) except dropout masks (1 B, bool).

ACTIVATION MEMORY OF A DECODER LAYER (saved_bytes, the a-bar of specs/rotor.md 1.2).
Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
Sec. 4.1, count what autograd keeps for one layer in 16-bit training, no parallelism:
    attention  11 sbh + 5 a s^2 b   (LN output / QKV input 2sbh, Q and K 4sbh, softmax
                                     output 2as^2b, its dropout mask as^2b, dropout output
                                     2as^2b and V 2sbh, output-projection input 2sbh,
                                     output dropout mask sbh)
    MLP        19 sbh               (fc1 input 2sbh, GeLU input 8sbh, fc2 input 8sbh,
                                     dropout mask sbh)
    2 x LN      4 sbh               (the inputs of the two layer norms)
    total      34 sbh + 5 a s^2 b bytes.
In fp32 every 2-byte element becomes 4 bytes but the dropout masks stay 1 byte: of the
34 sbh, 2 sbh are masks and of the 5 as^2b, 1 as^2b is a mask, so
    fp32 total = 2*(34-2) sbh + 2 sbh + 2*(5-1) as^2b + as^2b = 66 sbh + 9 a s^2 b bytes.
The paper counts the layer's own *input* (the first LN input, 4 sbh in fp32) and not its
output; rotor's a-bar excludes the input a_{l-1} and includes the output a_l (spec 1.2).
Both are s x b x h fp32 tensors, so the total is the same: saved_bytes = 66 sbh + 9 as^2b,
which includes out_bytes = 4 sbh.

TEMPORARIES. The attention scores QK^T/sqrt(d) (b x a x s x s fp32) exist in the forward
only until the softmax has consumed them: fwd_tmp_bytes = 4 b a s^2. In the backward the
gradient of the softmax input has the same shape: bwd_tmp_bytes = 4 b a s^2. (Fused or
flash attention would remove both and the as^2 terms above; this chain models the plain
PyTorch GPT-2 implementation.)

TIME. Forward FLOPs of a layer: 24 b s h^2 + 4 b s^2 h (Narayanan et al. 2021: the four
h x h projections and the two h x 4h MLP matrices, 2 FLOPs a multiply-add, plus QK^T and
attention x V), at an assumed sustained throughput of TFLOPS = 100 TFLOP/s (TF32 tensor
cores on an A100/H100-class GPU; change with --tflops). Backward = 2 x forward (the
gradients with respect to both inputs and weights). Memory-bound work (embedding, loss)
is timed as bytes moved / BANDWIDTH = 2.0 TB/s (--bandwidth).

EMBEDDING STAGE. Input a_0: the token ids, b x s int64 = 8 bs bytes. Output: token +
position embedding after dropout, 4 sbh. Saved: the output and the dropout mask (sbh); the
lookup's backward needs only the ids. Its backward scatters into a V x h gradient table.
param_bytes: token table V x h + position table s x h (fp32).

HEAD STAGE. Final layer norm + LM head (tied to the token embedding, so its weight is
counted once, in the embedding stage; param_bytes = the LN's 2h). Output: the logits,
4 b s V bytes. Saved: the LN output (the matmul input, 4 sbh), LN statistics (2 x 4 bs)
and the logits. FLOPs 2 b s h V.

LOSS. Cross-entropy over the logits: PyTorch computes log-softmax (4 b s V bytes) and keeps
it for the backward, which runs right after (F_all L+1 then B L+1), so it is temporary
memory of both: fwd_tmp_bytes = bwd_tmp_bytes = 4 b s V. Time: memory-bound, two passes
over the logits each way.
"""

import argparse
import json
import sys


def build(b, s, h, a, L, V, tflops, bandwidth_tb):
    flops_rate = tflops * 1e12
    bw = bandwidth_tb * 1e12
    sbh = s * b * h
    as2b = a * s * s * b

    emb_out = 4 * sbh
    emb = {
        "name": "embedding",
        # read token rows + position rows, write sum and dropout output and mask
        "fwd_time": (2 * 4 * sbh + 4 * sbh + 4 * sbh + sbh) / bw,
        # gradient table zeroing (V x h) + scatter-add of b s rows + dropout backward
        "bwd_time": (4 * V * h + 3 * 4 * sbh) / bw,
        "out_bytes": emb_out,
        "saved_bytes": emb_out + sbh,
        "fwd_tmp_bytes": 0,
        "bwd_tmp_bytes": 0,
        "param_bytes": 4 * (V * h + s * h),
    }

    layer_flops = 24 * b * s * h * h + 4 * b * s * s * h
    layer_fwd = layer_flops / flops_rate
    layer_params = 12 * h * h + 13 * h  # QKV, proj, fc1, fc2 weights + biases, 2 LNs
    layers = []
    for i in range(1, L + 1):
        layers.append(
            {
                "name": f"layer{i}",
                "fwd_time": layer_fwd,
                "bwd_time": 2 * layer_fwd,
                "out_bytes": 4 * sbh,
                "saved_bytes": 66 * sbh + 9 * as2b,
                "fwd_tmp_bytes": 4 * b * a * s * s,
                "bwd_tmp_bytes": 4 * b * a * s * s,
                "param_bytes": 4 * layer_params,
            }
        )

    logits = 4 * b * s * V
    head_fwd = 2 * b * s * h * V / flops_rate
    head = {
        "name": "ln_f+lm_head",
        "fwd_time": head_fwd,
        "bwd_time": 2 * head_fwd,
        "out_bytes": logits,
        "saved_bytes": 4 * sbh + 2 * 4 * b * s + logits,
        "fwd_tmp_bytes": 0,
        "bwd_tmp_bytes": 0,
        "param_bytes": 4 * 2 * h,
    }

    loss = {
        "fwd_time": 2 * logits / bw,
        "bwd_time": 2 * logits / bw,
        "fwd_tmp_bytes": logits,
        "bwd_tmp_bytes": logits,
    }
    for st in [emb, *layers, head]:
        st["fwd_time"] = round(st["fwd_time"], 12)
        st["bwd_time"] = round(st["bwd_time"], 12)
    loss["fwd_time"] = round(loss["fwd_time"], 12)
    loss["bwd_time"] = round(loss["bwd_time"], 12)
    return {
        "format": "chainplan.chain/v1",
        "input_bytes": 8 * b * s,
        "stages": [emb, *layers, head],
        "loss": loss,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="output file (default: stdout)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument(
        "--tflops",
        type=float,
        default=100.0,
        help="assumed sustained throughput, TFLOP/s (default 100)",
    )
    ap.add_argument(
        "--bandwidth",
        type=float,
        default=2.0,
        help="assumed memory bandwidth for memory-bound stages, TB/s (default 2)",
    )
    args = ap.parse_args(argv)
    for k in ("batch", "seq", "hidden", "heads", "layers", "vocab"):
        if getattr(args, k) < 1:
            ap.error(f"--{k} must be >= 1")
    if args.hidden % args.heads:
        ap.error("--hidden must be a multiple of --heads")
    if not (args.tflops > 0 and args.bandwidth > 0):
        ap.error("--tflops and --bandwidth must be > 0")
    chain = build(
        args.batch,
        args.seq,
        args.hidden,
        args.heads,
        args.layers,
        args.vocab,
        args.tflops,
        args.bandwidth,
    )
    text = json.dumps(chain, indent=1) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    st = chain["stages"]
    layer_mib = st[1]["saved_bytes"] / 2**20
    total_gib = (sum(x["saved_bytes"] for x in st) + chain["input_bytes"]) / 2**30
    fwd_ms = sum(x["fwd_time"] for x in st) * 1e3
    bwd_ms = sum(x["bwd_time"] for x in st) * 1e3
    print(
        f"transformer_chain: {len(st)} stages, layer saved {layer_mib:.0f} MiB, "
        f"sum of saved + input {total_gib:.2f} GiB, fwd {fwd_ms:.2f} ms, bwd {bwd_ms:.2f} ms",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
