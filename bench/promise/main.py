"""The memory promise against PyTorch's own checkpointing, measured on running models.

For each model (bench/promise/models.py): the measured activation peak and step time of the
plain model, of ``torch.utils.checkpoint.checkpoint_sequential`` at every segment count, of
chainplan's ``sequential`` baseline at the same counts, and of rotor given, as its budget,
each checkpoint_sequential's measured peak; then the smallest plan. Every variant is timed
in one process, alternating: round r runs one step of every variant in turn, and the
figure is the median over the rounds. Peaks come from ``chainplan.measure`` (CPU allocator
events; parameters, gradients and optimizer state excluded, the input included).

With ``--compile``, on the GPT: ``torch.compile`` at several
``torch._functorch.config.activation_memory_budget`` values, a compiled wrapped plan
(``torch.compile(plan.wrap(model))``) and chainplan with compiled stages.

Run from the repository root after ``make bind``::

    .venv/bin/python bench/promise/main.py [--models gpt,resnet,cnn-head] [--rounds 9]
        [--compile] [-o docs/promise-bench.md]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.db"))

from models import MODELS, Case  # noqa: E402

import chainplan  # noqa: E402
from chainplan.stages import flatten_stages  # noqa: E402
from tests.models import CheckpointSequential  # noqa: E402

MiB = 2**20
MAX_SEGMENTS = 12  # segment counts 2..12: beyond, checkpoint_sequential only gets slower


@dataclass
class Variant:
    name: str
    net: nn.Module
    peak: int = 0
    times: list[float] | None = None
    note: str = ""

    @property
    def ms(self) -> float:
        assert self.times
        return statistics.median(self.times) * 1e3


def step_fn(v: Variant, x: torch.Tensor, y: torch.Tensor,
            loss_fn: nn.Module) -> Callable[[], None]:
    def step() -> None:
        loss_fn(v.net(x), y).backward()
    return step


def measure_all(variants: list[Variant], model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                loss_fn: nn.Module, rounds: int) -> None:
    for v in variants:
        v.peak = chainplan.measure(v.net, x, loss_fn=loss_fn, target=y, steps=1,
                                   store=False).peak_bytes
        v.times = []
    steps = [step_fn(v, x, y, loss_fn) for v in variants]
    for _ in range(rounds):
        for v, step in zip(variants, steps, strict=True):
            t0 = time.perf_counter()
            step()
            assert v.times is not None
            v.times.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=False)


def bench_model(name: str, case: Case, rounds: int, out: list[str]) -> dict[str, float]:
    model, x, y, loss_fn = case
    model.train()
    # checkpoint_sequential splits the top-level modules; chainplan flattens nested
    # Sequentials into stages. Both get the same flattened chain (the same parameters), so
    # that k segments mean the same split for both.
    model = nn.Sequential(*flatten_stages(model))
    n = len(model)
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=5, warmup=2,
                             progress=False, name=name)
    variants = [Variant("plain", model)]
    counts = range(2, min(n, MAX_SEGMENTS) + 1)
    for k in counts:
        variants.append(Variant(f"checkpoint_sequential({k})", CheckpointSequential(model, k)))
    for k in counts:
        p = chainplan.plan(prof, budget="1TiB", algo="sequential", segments=k)
        variants.append(Variant(f"chainplan sequential({k})", p.wrap(model)))
    measure_all(variants, model, x, y, loss_fn, 1)  # peaks of the baselines first
    cs = [v for v in variants if v.name.startswith("checkpoint_sequential")]
    rotor: list[Variant] = []
    for v in cs + [variants[0]]:
        try:
            p = chainplan.plan(prof, budget=v.peak)
        except chainplan.InfeasibleBudget as e:
            rotor.append(Variant(f"rotor @ {v.name}", nn.Identity(),
                                 note=f"infeasible (min {e.min_budget_bytes / MiB:.1f} MiB)"))
            continue
        rotor.append(Variant(f"rotor @ {v.name}", p.wrap(model), note=f"{p.budget_bytes}"))
    smallest = chainplan.plan(prof, budget="min")
    runnable = variants + [r for r in rotor if not r.note.startswith("infeasible")]
    runnable.append(Variant("rotor, smallest budget", smallest.wrap(model),
                            note=f"{smallest.budget_bytes}"))
    measure_all(runnable, model, x, y, loss_fn, rounds)

    plain = variants[0]
    out.append(f"## {name} ({n} stages, {sum(p.numel() for p in model.parameters()):,} "
               f"parameters, input {tuple(x.shape)})\n")
    out.append("| variant | budget MiB | measured peak MiB | step ms | time / plain |")
    out.append("|---|---|---|---|---|")
    for v in runnable + [r for r in rotor if r.note.startswith("infeasible")]:
        if v.note.startswith("infeasible"):
            out.append(f"| {v.name} | | {v.note} | | |")
            continue
        budget = f"{int(v.note) / MiB:.1f}" if v.note else ""
        out.append(f"| {v.name} | {budget} | {v.peak / MiB:.1f} | {v.ms:.1f} | "
                   f"{v.ms / plain.ms:.3f} |")
    # Rotor against the fastest checkpoint_sequential that fits in rotor's measured memory.
    ratios = []
    out.append("")
    out.append("| budget (a checkpoint_sequential's peak) | rotor peak MiB | rotor ms | "
               "best checkpoint_sequential within it | its ms | rotor / it |")
    out.append("|---|---|---|---|---|---|")
    for r in rotor:
        if r.note.startswith("infeasible"):
            continue
        fits = [c for c in cs + [plain] if c.peak <= r.peak * 1.001]
        if not fits:
            continue
        best = min(fits, key=lambda c: c.ms)
        ratios.append(r.ms / best.ms)
        out.append(f"| {r.name.removeprefix('rotor @ ')} ({int(r.note) / MiB:.1f} MiB) | "
                   f"{r.peak / MiB:.1f} | {r.ms:.1f} | {best.name} ({best.peak / MiB:.1f} MiB)"
                   f" | {best.ms:.1f} | {ratios[-1]:.3f} |")
    best_cs = min(c.peak for c in cs)
    small = runnable[-1]
    summary = {"smallest_mib": small.peak / MiB, "best_cs_mib": best_cs / MiB,
               "geomean": statistics.geometric_mean(ratios) if ratios else float("nan"),
               "worst": max(ratios) if ratios else float("nan")}
    out.append("")
    out.append(f"Smallest plan {summary['smallest_mib']:.1f} MiB measured against the best "
               f"checkpoint_sequential {summary['best_cs_mib']:.1f} MiB; rotor / best "
               f"checkpoint_sequential within the same measured memory: geometric mean "
               f"{summary['geomean']:.3f}, worst {summary['worst']:.3f}.\n")
    return summary


def compile_one(budget: float, rounds: int) -> dict[str, float]:
    """Measure ``torch.compile`` of the GPT at one activation-memory budget, alternating
    with the eager model, in this (fresh) process."""
    import torch._functorch.config as fconfig

    model, x, y, loss_fn = MODELS["gpt"]()
    model.train()
    fconfig.activation_memory_budget = budget
    compiled = Variant("compiled", torch.compile(copy.deepcopy(model)))
    chainplan.measure(compiled.net, x, loss_fn=loss_fn, target=y, steps=1, store=False)
    plain = Variant("plain", model)
    measure_all([plain, compiled], model, x, y, loss_fn, rounds)
    return {"peak": compiled.peak, "ms": compiled.ms, "plain_peak": plain.peak,
            "plain_ms": plain.ms}


def bench_compile(rounds: int, threads: int, out: list[str]) -> None:
    # The partitioner reads activation_memory_budget once per process in practice: its
    # compiled-graph caches handed every budget the first one's partition (64.6 MiB for all
    # four), so each budget is measured in a process of its own, alternating with the eager
    # model there, and reported relative to that process's eager step.
    t0 = time.perf_counter()
    rows = []
    for budget in (1.0, 0.5, 0.2, 0.05):
        res = subprocess.run(
            [sys.executable, __file__, "--compile-budget", str(budget), "--rounds", str(rounds),
             "--threads", str(threads)], check=True, capture_output=True, text=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append((f"torch.compile, activation_memory_budget {budget}", r))

    model, x, y, loss_fn = MODELS["gpt"]()
    model.train()
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=5, warmup=2,
                             progress=False, name="gpt")
    plain = Variant("eager plain", model)
    variants = [plain, Variant("checkpoint_sequential(3)", CheckpointSequential(model, 3))]
    smallest = chainplan.plan(prof, budget="min")
    variants.append(Variant("chainplan rotor, smallest budget (eager)", smallest.wrap(model)))
    variants.append(Variant("torch.compile(plan.wrap(model))",
                            torch.compile(smallest.wrap(model))))
    staged = copy.deepcopy(model)
    for i in range(len(staged)):
        staged[i] = torch.compile(staged[i])  # type: ignore[assignment]
    variants.append(Variant("chainplan rotor, smallest budget, compiled stages",
                            smallest.wrap(staged)))
    measure_all(variants, model, x, y, loss_fn, rounds)
    seconds = time.perf_counter() - t0
    out.append(f"## torch.compile on the GPT (compile and measure {seconds:.0f} s)\n")
    out.append("Each activation_memory_budget runs in a process of its own, alternating with "
               "the eager model there; the other rows alternate in one process. Time / eager is "
               "relative to the eager step of the same process.\n")
    out.append("| variant | measured peak MiB | step ms | time / eager |")
    out.append("|---|---|---|---|")
    for name, r in rows:
        out.append(f"| {name} | {r['peak'] / MiB:.1f} | {r['ms']:.1f} | "
                   f"{r['ms'] / r['plain_ms']:.3f} |")
    for v in variants:
        out.append(f"| {v.name} | {v.peak / MiB:.1f} | {v.ms:.1f} | {v.ms / plain.ms:.3f} |")
    out.append("")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("-o", "--output", default="")
    ap.add_argument("--compile-budget", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.compile_budget is not None:
        print(json.dumps(compile_one(args.compile_budget, args.rounds)))
        return 0
    out = ["# The memory promise against checkpoint_sequential and torch.compile", "",
           f"Generated by `.venv/bin/python bench/promise/main.py {' '.join(sys.argv[1:])}` "
           f"on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
           f"{args.threads} thread(s), torch {torch.__version__}, "
           f"{time.strftime('%Y-%m-%d')}. Do not edit by hand.", "",
           "Peaks are measured activation memory of one training step (CPU allocator events; "
           "parameters, gradients and optimizer state excluded, the input included); times "
           f"are medians over {args.rounds} alternating rounds.", ""]
    summaries = {}
    for name in args.models.split(","):
        torch.manual_seed(0)
        summaries[name] = bench_model(name, MODELS[name](), args.rounds, out)
        print("\n".join(out[-3:]), flush=True)
    if args.compile:
        bench_compile(args.rounds, args.threads, out)
    text = "\n".join(out) + "\n"
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
