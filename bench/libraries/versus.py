"""One family measured against the library's own ``gradient_checkpointing_enable()``: what
``causal_lm.py`` and ``seq2seq.py`` share.

For a model and the call its users make: the plain step, the library's checkpointing,
chainplan's plans at the budgets of the rotor frontier of its profile (every point where
the optimal time drops, thinned to ``points``) and at the library's measured peak (the time
at equal memory), each measured. Peaks are ``chainplan.measure``'s (the CPU allocator's
events; weights, their gradients and optimizer state excluded), step times medians over
alternating rounds in one process.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

import chainplan

AT_LIBRARY = "chainplan @ library peak"


@dataclass
class Versus:
    """The variants of one family, measured (``plain``, ``library``, then the plans)."""

    profile: chainplan.Profile
    profiling_s: float
    nets: dict[str, nn.Module]
    plans: dict[str, chainplan.Plan]
    peaks: dict[str, int]
    times: dict[str, float]

    @property
    def best(self) -> str | None:
        """The plan of smallest measured peak among those within 1.25x the plain step."""
        within = [k for k in self.plans
                  if k != AT_LIBRARY and self.times[k] <= 1.25 * self.times["plain"]]
        return min(within, key=lambda k: self.peaks[k]) if within else None

    def row(self, k: str, *, budget: bool) -> str:
        """The table row of variant ``k`` (peaks in MiB, time in ms and against plain)."""
        p = self.plans.get(k)
        cells = [f"{p.peak_bytes / 2**20:.2f}" if p else ""]
        if budget:
            cells.append(f"{p.budget_bytes / 2**20:.2f}" if p else "")
        mark = " (smallest within 1.25x)" if k == self.best else ""
        return (f"| {k}{mark} | {self.peaks[k] / 2**20:.2f} | {self.times[k] * 1e3:.1f} | "
                f"{self.times[k] / self.times['plain']:.3f} | {' | '.join(cells)} |")

    def summary(self, name: str) -> str:
        """The family's line: the smallest peak within 1.25x against the library's, and the
        time at the library's peak."""
        text = f"\n{name}: "
        best, lib = self.best, self.peaks["library"]
        if best is not None:
            text += (f"smallest within 1.25x: {self.peaks[best] / 2**20:.2f} MiB, "
                     f"{self.peaks[best] / lib:.2f}x the library's {lib / 2**20:.2f} MiB")
        else:
            text += "no plan within 1.25x the plain step"
        if AT_LIBRARY in self.nets:
            ratio = self.times[AT_LIBRARY] / self.times["library"]
            text += f"; at the library's peak, time {ratio:.2f}x the library's"
        return text


def versus(model: nn.Module, call: dict[str, Any], *, points: int, rounds: int) -> Versus:
    """Profile ``model`` on ``call``, plan along its frontier and at the library's peak, and
    measure every variant."""
    lib = copy.deepcopy(model)
    lib.gradient_checkpointing_enable()
    t0 = time.perf_counter()
    prof = chainplan.profile(model, **call, progress=False, spread_warning=None, reuse=False)
    profiling = time.perf_counter() - t0
    nets: dict[str, nn.Module] = {"plain": model, "library": lib}
    plans: dict[str, chainplan.Plan] = {}
    for b in budgets(prof, points):
        plans[f"chainplan @ {b / 2**20:.1f} MiB"] = chainplan.plan(prof, budget=b)
    try:
        plans[AT_LIBRARY] = chainplan.plan(prof, budget=peak(lib, call))
    except chainplan.InfeasibleBudget:
        pass
    for label, p in plans.items():
        nets[label] = p.wrap(model)
    peaks = {k: peak(n, call) for k, n in nets.items()}
    times = median_times({k: step(n, call) for k, n in nets.items()}, nets, rounds)
    return Versus(prof, profiling, nets, plans, peaks, times)


def step(net: nn.Module, call: dict[str, Any]) -> Callable[[], None]:
    def run() -> None:
        net(**call).loss.backward()
    return run


def peak(net: nn.Module, call: dict[str, Any]) -> int:
    return chainplan.measure(net, **call, steps=1, store=False).peak_bytes


def median_times(steps: dict[str, Callable[[], None]], nets: dict[str, nn.Module],
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


def budgets(prof: chainplan.Profile, points: int) -> list[int]:
    """Budgets along the rotor frontier, the smallest first, at most ``points``."""
    front = chainplan.tradeoff.frontier(prof)
    found = [p.budget_bytes for p in front.points]
    if len(found) > points:
        stride = (len(found) - 1) / (points - 1)
        found = [found[round(i * stride)] for i in range(points)]
    return found


def parser(description: str, families: Sequence[str], *, points: int) -> argparse.ArgumentParser:
    """The options both benchmarks take (each adds its model's sizes)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--families", nargs="+", default=list(families))
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--points", type=int, default=points)
    ap.add_argument("-o", "--output", default="")
    return ap


def report(opts: argparse.Namespace, header: list[str],
           family: Callable[[str], list[str]]) -> None:
    """Measure every family of ``opts.families`` on one thread, in a private database,
    printing each table as it comes and writing the whole report to ``opts.output``."""
    os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.sqlite"))
    torch.set_num_threads(1)
    lines = list(header)
    for name in opts.families:
        out = family(name)
        print("\n".join(out), flush=True)
        lines.extend(out)
    if opts.output:
        with open(opts.output, "w") as f:
            f.write("\n".join(lines) + "\n")


def machine() -> str:
    """The report's machine line: CPUs, threads, torch."""
    return f"on {os.cpu_count()} CPUs, 1 thread, torch {torch.__version__}"
