"""Causal language models as their users call them, ``model(input_ids=ids, labels=ids)``:
chainplan (``Checkpointed``, the head fused with its loss) against the library's own
``gradient_checkpointing_enable()``, family by family (issue 35's target: chainplan's
smallest measured peak within 1.25x the plain step's time at most 0.6x the library's).

Per family (a tiny config from transformers' config class, :mod:`families`; vocabulary
16384 or more): the plain step; the library's checkpointing; chainplan's plans at the
budgets of the rotor frontier of its profile (every point where the optimal time drops,
thinned to ``--points``), each measured; chainplan's smallest measured peak among the plans
whose measured step is within 1.25x the plain one; and chainplan at the library's measured
peak (the time at equal memory). Peaks are ``chainplan.measure``'s (the CPU allocator's
events; weights, their gradients and optimizer state excluded), step times medians over
alternating rounds in one process.

Usage::

    .venv/bin/python bench/libraries/causal_lm.py [--families llama mistral ...]
        [--rounds 5] [-o docs/libraries-bench-lm.md]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from families import causal_lm  # noqa: E402

import chainplan  # noqa: E402

DEFAULT = ("llama", "mistral", "phi", "gpt_neox", "qwen2", "gemma2", "gpt2")


def _step(net: nn.Module, call: dict[str, Any]) -> Callable[[], None]:
    def step() -> None:
        net(**call).loss.backward()
    return step


def _peak(net: nn.Module, call: dict[str, Any]) -> int:
    return chainplan.measure(net, **call, steps=1, store=False).peak_bytes


def _times(steps: dict[str, Callable[[], None]], nets: dict[str, nn.Module],
           rounds: int) -> dict[str, float]:
    """Median step time of each variant, alternating them round after round."""
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(rounds):
        for k, fn in steps.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
            nets[k].zero_grad(set_to_none=True)
    return {k: statistics.median(v) for k, v in times.items()}


def _budgets(prof: chainplan.Profile, points: int) -> list[int]:
    """Budgets along the rotor frontier, the smallest first, at most ``points``."""
    front = chainplan.tradeoff.frontier(prof)
    budgets = [p.budget_bytes for p in front.points]
    if len(budgets) > points:
        step = (len(budgets) - 1) / (points - 1)
        budgets = [budgets[round(i * step)] for i in range(points)]
    return budgets


def family(name: str, *, vocab: int, seq: int, batch: int, rounds: int,
           points: int) -> list[str]:
    torch.manual_seed(0)
    model = causal_lm(name, vocab=vocab, width=128, layers=4, heads=4, kv_heads=2, seq=seq)
    ids = torch.randint(0, vocab, (batch, seq))
    call = {"input_ids": ids, "labels": ids}
    lib = copy.deepcopy(model)
    lib.gradient_checkpointing_enable()
    t0 = time.perf_counter()
    prof = chainplan.profile(model, **call, progress=False, spread_warning=None, reuse=False)
    profiling = time.perf_counter() - t0
    nets: dict[str, nn.Module] = {"plain": model, "library": lib}
    plans: dict[str, chainplan.Plan] = {}
    for b in _budgets(prof, points):
        p = chainplan.plan(prof, budget=b)
        plans[f"chainplan @ {b / 2**20:.1f} MiB"] = p
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
    within = [k for k in plans if k != "chainplan @ library peak"
              and times[k] <= 1.25 * plain]
    best = min(within, key=lambda k: peaks[k]) if within else None
    lines = [f"\n## {name} ({type(model).__name__})\n",
             f"Vocabulary {vocab}, width 128, 4 layers, batch {batch}, sequence {seq}; "
             f"profiled in {profiling:.1f} s.\n",
             "| variant | measured peak MiB | step ms | time / plain | predicted MiB |",
             "|---|---|---|---|---|"]
    for k in nets:
        pred = f"{plans[k].peak_bytes / 2**20:.2f}" if k in plans else ""
        mark = " (smallest within 1.25x)" if k == best else ""
        lines.append(f"| {k}{mark} | {peaks[k] / 2**20:.2f} | {times[k] * 1e3:.1f} | "
                     f"{times[k] / plain:.3f} | {pred} |")
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
    lines.append(summary + ".")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(DEFAULT))
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--points", type=int, default=6)
    parser.add_argument("-o", "--output", default="")
    opts = parser.parse_args()
    os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "lm.sqlite"))
    torch.set_num_threads(1)
    lines = ["# Causal language models as called: chainplan against the library's "
             "checkpointing\n",
             "Generated by `.venv/bin/python bench/libraries/causal_lm.py "
             f"--rounds {opts.rounds}` on {os.cpu_count()} CPUs, 1 thread, torch "
             f"{torch.__version__}; the machine may be shared: compare ratios within a "
             "table. Every model is called as `model(input_ids=ids, labels=ids)`: "
             "chainplan's head is fused with its loss (`logits` None), the library's "
             "is PyTorch's."]
    for name in opts.families:
        out = family(name, vocab=opts.vocab, seq=opts.seq, batch=opts.batch,
                     rounds=opts.rounds, points=opts.points)
        print("\n".join(out), flush=True)
        lines.extend(out)
    if opts.output:
        with open(opts.output, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
