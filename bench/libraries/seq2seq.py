"""Encoder-decoders as their users call them,
``model(input_ids=src, attention_mask=mask, labels=tgt)``: chainplan (``Checkpointed``'s
plans, the decoder the chain, the encoder's output a side value, the head fused with its
loss) against the library's own ``gradient_checkpointing_enable()``, family by family
(issue 35).

Per family (T5, BART, Pegasus, Marian: a tiny config, :func:`families.seq2seq`): the plain
step, the library's checkpointing, chainplan's plans along the rotor frontier of its
profile, chainplan's smallest measured peak among the plans whose step is within 1.25x the
plain one, and chainplan at the library's measured peak (the time at equal memory); the
measurement as in :mod:`causal_lm` (``chainplan.measure``'s peaks, median step times over
alternating rounds in one process).

Usage::

    .venv/bin/python bench/libraries/seq2seq.py [--families t5 bart ...] [--rounds 5]
        [-o docs/libraries-bench-seq2seq.md]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
from typing import Any

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from causal_lm import _budgets, _peak, _step, _times  # noqa: E402
from families import SEQ2SEQ, seq2seq  # noqa: E402

import chainplan  # noqa: E402


def family(name: str, *, vocab: int, src: int, tgt: int, batch: int, layers: int,
           rounds: int, points: int) -> list[str]:
    torch.manual_seed(0)
    model = seq2seq(name, vocab=vocab, width=128, layers=layers, heads=4)
    ids = torch.randint(3, vocab, (batch, src))
    mask = torch.ones_like(ids)
    mask[0, : src // 4] = 0  # one padded row
    call: dict[str, Any] = {"input_ids": ids, "attention_mask": mask,
                            "labels": torch.randint(3, vocab, (batch, tgt))}
    lib = copy.deepcopy(model)
    lib.gradient_checkpointing_enable()
    t0 = time.perf_counter()
    prof = chainplan.profile(model, **call, progress=False, spread_warning=None, reuse=False)
    profiling = time.perf_counter() - t0
    nets: dict[str, nn.Module] = {"plain": model, "library": lib}
    plans: dict[str, chainplan.Plan] = {}
    for b in _budgets(prof, points):
        plans[f"chainplan @ {b / 2**20:.1f} MiB"] = chainplan.plan(prof, budget=b)
    lib_peak = _peak(lib, call)
    try:
        plans["chainplan @ library peak"] = chainplan.plan(prof, budget=lib_peak)
    except chainplan.InfeasibleBudget:
        pass
    for label, p in plans.items():
        nets[label] = p.wrap(model)
    peaks = {k: _peak(n, call) for k, n in nets.items()}
    times = _times({k: _step(n, call) for k, n in nets.items()}, nets, rounds)
    plain = times["plain"]
    within = [k for k in plans if k != "chainplan @ library peak" and times[k] <= 1.25 * plain]
    best = min(within, key=lambda k: peaks[k]) if within else None
    side = sum(s.nbytes for s in prof.split.side) if prof.split is not None else 0
    lines = [f"\n## {name} ({type(model).__name__})\n",
             f"Vocabulary {vocab}, width 128, {layers} encoder and {layers} decoder layers, "
             f"batch {batch}, source {src}, target {tgt}; profiled in {profiling:.1f} s. "
             f"Held through the step before the decoder's chain: "
             f"{prof.side_bytes / 2**20:.2f} MiB, the side values (the encoder's output, "
             f"masks, labels: {side / 2**20:.2f} MiB), their gradients and the encoder's "
             "activations saved for its backward.\n",
             "| variant | measured peak MiB | step ms | time / plain | predicted MiB | "
             "budget MiB |",
             "|---|---|---|---|---|---|"]
    for k in nets:
        pred = f"{plans[k].peak_bytes / 2**20:.2f}" if k in plans else ""
        budget = f"{plans[k].budget_bytes / 2**20:.2f}" if k in plans else ""
        mark = " (smallest within 1.25x)" if k == best else ""
        lines.append(f"| {k}{mark} | {peaks[k] / 2**20:.2f} | {times[k] * 1e3:.1f} | "
                     f"{times[k] / plain:.3f} | {pred} | {budget} |")
    summary = f"\n{name}: "
    if best is not None:
        summary += (f"smallest within 1.25x: {peaks[best] / 2**20:.2f} MiB, "
                    f"{peaks[best] / peaks['library']:.2f}x the library's "
                    f"{peaks['library'] / 2**20:.2f} MiB")
    else:
        summary += "no plan within 1.25x the plain step"
    if "chainplan @ library peak" in nets:
        ratio = times["chainplan @ library peak"] / times["library"]
        summary += f"; at the library's peak, time {ratio:.2f}x the library's"
    worst = max((abs(peaks[k] / plans[k].peak_bytes - 1) for k in plans), default=0.0)
    over = max((peaks[k] / plans[k].budget_bytes - 1 for k in plans), default=0.0)
    summary += (f"; measured against predicted: within {worst * 100:.1f} %, "
                f"largest overrun of a budget {over * 100:+.1f} %")
    lines.append(summary + ".")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(SEQ2SEQ))
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--src", type=int, default=128)
    parser.add_argument("--tgt", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--points", type=int, default=5)
    parser.add_argument("-o", "--output", default="")
    opts = parser.parse_args()
    os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "s2s.sqlite"))
    torch.set_num_threads(1)
    lines = ["# Encoder-decoders as called: chainplan against the library's checkpointing\n",
             "Generated by `.venv/bin/python bench/libraries/seq2seq.py "
             f"--rounds {opts.rounds} -o docs/libraries-bench-seq2seq.md` on "
             f"{os.cpu_count()} CPUs, 1 thread, torch {torch.__version__}; the machine may "
             "be shared: compare ratios within a table. Every model is called as "
             "`model(input_ids=src, attention_mask=mask, labels=tgt)`: chainplan's chain is "
             "the decoder, the encoder runs once per step before it and its output is a "
             "side value (docs/executors.md, \"Encoder-decoders\"), the head is fused with "
             "its loss (`logits` None); the library's head is PyTorch's."]
    for name in opts.families:
        out = family(name, vocab=opts.vocab, src=opts.src, tgt=opts.tgt, batch=opts.batch,
                     layers=opts.layers, rounds=opts.rounds, points=opts.points)
        print("\n".join(out), flush=True)
        lines.extend(out)
    if opts.output:
        with open(opts.output, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
