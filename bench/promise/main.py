"""chainplan against PyTorch's own checkpointing and torch.compile, on running models.

For each model (bench/promise/models.py): the measured activation peak and step time of the
plain model, of every alternative a user would reach for (bench/promise/systems.py:
``checkpoint_sequential(k)`` or grouped blocks for every k, per-block checkpointing, per-block
selective activation checkpointing), of chainplan given, as its budget, each alternative's
measured peak, and of chainplan at budgets spread from its smallest to store-all (the
frontier). chainplan's rows run the model with its loss inside (``chainplan.WithLoss``; a
linear head's cross-entropy then runs fused, docs/executors.md, "The loss inside the
chain"), an ``nn.Sequential`` as declared with its loss outside; ``chainplan, loss outside,
smallest`` is the smallest plan of the model with the loss outside, as the script wrote it.
At equal memory, chainplan's step is compared with the fastest alternative within the
larger of the two measured peaks (the alternative's, which is chainplan's budget, and
chainplan's). Every variant of a model is timed in one process, alternating: round r runs one
step of every variant in turn, and the figure is the median over the rounds, so a busy
machine slows all of them alike; ratios to the plain step are what the report compares.
Peaks come from ``chainplan.measure`` (CPU allocator events, or ``max_memory_allocated`` on
CUDA; parameters, gradients and optimizer state excluded, the input included).

With ``--compile``: ``torch.compile`` at several ``activation_memory_budget`` values, and
chainplan's plans compiled (``torch.compile(plan.wrap(model))``), each model in processes of
its own (the partitioner's caches keep the first budget's choice within a process).

Run from the repository root after ``make bind``::

    .venv/bin/python bench/promise/main.py [--models gpt,llama,resnet,vit,cnn-head]
        [--rounds 7] [--compile [--compile-plans K]] [--device cpu|cuda]
        [--size small|large] [--clock wall|cpu] [-o docs/promise-bench.md]

``--clock cpu`` times each step by the process's CPU time instead of the wall clock, for a
one-thread run on a host shared with other work (``CLOCKS``).

``--compile-plans K`` compiles K of chainplan's plans (spread from the smallest to the
largest budget) instead of all of them: each compiled plan is one more compilation, which on
a large model costs tens of seconds.

The report's tables and the frontier picture (docs/promise-frontier.svg beside
docs/promise-bench.md, :func:`frontier_name`; drawn by ``go run ./bench/promise/frontier``)
go to ``-o`` and beside it.

On a language model (``gpt``, ``llama``) every alternative also runs with the fused head
(bench/promise/systems.py, ``fused_head``): chainplan's ``linear_cross_entropy`` in place of
the model's head and PyTorch's loss, as a user could write it without a plan, and
``torch.compile`` at each budget too. The tables compare chainplan with the fastest
alternative of each kind, so what the plan adds is apart from what the fused head adds.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.db"))

from models import DEFAULT, MODELS, SIZES, Bench  # noqa: E402
from report import FUSED, OUTSIDE, Result, Variant, report_model, summarize  # noqa: E402
from systems import fused_head, grouped, per_block  # noqa: E402

import chainplan  # noqa: E402
from chainplan.stages import flatten_stages  # noqa: E402
from tests.models import CheckpointSequential  # noqa: E402

MAX_SEGMENTS = 12
SWEEP = 6  # chainplan budgets between its smallest and store-all, for the frontier


def to_device(case: Bench, device: str) -> Bench:
    case.model.to(device)
    case.args = tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in case.args)
    case.kwargs = {k: v.to(device) if isinstance(v, torch.Tensor) else v
                   for k, v in case.kwargs.items()}
    case.target = case.target.to(device)
    return case


def step(v: Variant, case: Bench) -> None:
    if v.own_loss:
        v.net(*case.args, labels=case.target, **case.kwargs)["loss"].backward()
    else:
        case.loss_fn(v.net(*case.args, **case.kwargs), case.target).backward()


def measure_peaks(variants: list[Variant], case: Bench) -> None:
    for v in variants:
        if v.peak == 0 and v.own_loss:
            v.peak = chainplan.measure(v.net, *case.args, labels=case.target, steps=1,
                                       store=False, **case.kwargs).peak_bytes
        elif v.peak == 0:
            v.peak = chainplan.measure(v.net, *case.args, loss_fn=case.loss_fn,
                                       target=case.target, steps=1, store=False,
                                       **case.kwargs).peak_bytes


def with_loss(case: Bench) -> torch.nn.Module:
    """The model as chainplan's rows run it. The model and its loss as one module
    (chainplan.WithLoss): the loss is then part of the planned chain, and a linear head's
    cross-entropy runs fused (chainplan.graph.fuseloss). The same model object: its
    parameters are the model's. An nn.Sequential runs as declared, its loss outside: its
    stages are the ones it declares, and a WithLoss around it would be captured instead."""
    if case.sequential:
        return case.model
    return chainplan.WithLoss(case.model, case.loss_fn)


# The clock steps are timed with (--clock): the wall clock, or the process's CPU time. On a
# host shared with other work, a one-thread CPU step's wall time counts the time it waited
# for a core, which no alternating order evens out when the load comes in bursts; its CPU
# time counts only what the step computed (page faults included, as system time).
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]
CLOCK_NAME = ["wall"]  # for the compiled runs' child processes


def time_rounds(variants: list[Variant], case: Bench, rounds: int) -> None:
    sync = torch.cuda.synchronize if case.target.is_cuda else (lambda: None)
    for v in variants:  # one untimed step each: allocations, lazy captures, compilation
        step(v, case)
        v.times = []
    for _ in range(rounds):
        for v in variants:
            sync()
            t0 = clock()
            step(v, case)
            sync()
            v.times.append(clock() - t0)
            for p in v.net.parameters():
                p.grad = None


def alternatives(name: str, case: Bench) -> list[Variant]:
    """The plain model and what PyTorch offers (module docstring); on a language model,
    each of them also with the fused head (systems.fused_head), the same fused
    cross-entropy chainplan's rows run."""
    model = case.model
    builders: list[tuple[str, str, Callable[[], torch.nn.Module]]] = [
        ("plain", "plain", lambda: copy.deepcopy(model))]
    if case.sequential:
        chain = torch.nn.Sequential(*flatten_stages(model))
        for k in range(2, min(len(chain), MAX_SEGMENTS) + 1):
            builders.append((f"checkpoint_sequential({k})", "checkpoint_sequential",
                             partial(CheckpointSequential, chain, k)))
    else:
        for k in range(2, len(case.blocks) + 1):
            builders.append((f"grouped({k})", "checkpoint_sequential",
                             partial(grouped, model, case.blocks, k)))
    builders.append(("per-block", "per-block", partial(per_block, model, case.blocks)))
    builders.append(("per-block SAC", "per-block SAC",
                     partial(per_block, model, case.blocks, sac=True)))
    out = [Variant(label, family, model if family == "plain" else make())
           for label, family, make in builders]
    if case.head:
        out += [Variant(label + FUSED, family + FUSED, fused_head(make(), case.head),
                        own_loss=True) for label, family, make in builders]
    return out


def chainplan_variants(prof: chainplan.Profile, case: Bench, alts: list[Variant],
                       net: torch.nn.Module) -> list[Variant]:
    """chainplan at each alternative's measured peak, then at budgets spread from its
    smallest to store-all, run on ``net``, the module ``prof`` profiled (its capture is
    reused); identical plans are run once."""
    seen: dict[str, Variant] = {}
    out: list[Variant] = []
    inside = net is not case.model

    def add(label: str, budget: int | str) -> None:
        try:
            p = chainplan.plan(prof, budget=budget)
        except chainplan.InfeasibleBudget as e:
            out.append(Variant(label, "chainplan", None, budget=int(budget),
                               note=f"infeasible (min {e.min_budget_bytes / 2**20:.1f} MiB)"))
            return
        key = str(p) + repr(sorted(p.choices.items()))
        if key in seen:
            seen[key].labels.append(label)
            return
        v = Variant(label, "chainplan", p.wrap(net), budget=p.budget_bytes,
                    predicted=p.peak_bytes, plan=p, own_loss=inside)
        seen[key] = v
        out.append(v)

    for a in alts:
        add(f"chainplan @ {a.name}", a.peak)
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    add("chainplan, smallest", "min")
    for j in range(1, SWEEP + 1):
        add(f"chainplan sweep {j}", lo + (hi - lo) * j // (SWEEP + 1))
    return out


def outside_smallest(name: str, case: Bench) -> Variant:
    """chainplan's smallest plan of the model with the loss computed outside it, as the
    script wrote it (``loss_fn(net(x), y)``): what the fused loss adds, measured."""
    prof = chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             repeats=5, warmup=2, progress=False, name=f"{name}, loss outside",
                             spread_warning=None, **case.kwargs)
    p = chainplan.plan(prof, budget="min")
    return Variant(f"{OUTSIDE}, smallest", OUTSIDE, p.wrap(case.model), budget=p.budget_bytes,
                   predicted=p.peak_bytes, plan=p)


def bench_model(name: str, case: Bench, rounds: int) -> Result:
    case.model.train()
    net = with_loss(case)
    call = ({"labels": case.target} if net is not case.model else
            {"loss_fn": case.loss_fn, "target": case.target})
    prof = chainplan.profile(net, *case.args, repeats=5, warmup=2, progress=False, name=name,
                             spread_warning=None, **call, **case.kwargs)
    alts = alternatives(name, case)
    measure_peaks(alts, case)
    ours = chainplan_variants(prof, case, alts, net)
    if net is not case.model:
        ours.append(outside_smallest(name, case))
    runnable = [v for v in alts + ours if v.net is not None]
    measure_peaks(runnable, case)
    time_rounds(runnable, case, rounds)
    return Result(name, case, prof, alts, ours)


def compile_run(name: str, size: str, budget: float, rounds: int, device: str, run_id: int,
                plan_budgets: list[int]) -> dict[str, object]:
    """In a fresh process: torch.compile at one activation_memory_budget (plan_budgets
    empty), or chainplan's plans at these budgets compiled, each against the eager plain
    model of the same process."""
    import torch._functorch.config as fconfig

    torch.manual_seed(0)
    case = to_device(MODELS[name](size), device)
    case.model.train()
    plain = Variant("plain", "plain", case.model)
    variants = [plain]
    if not plan_budgets:
        fconfig.activation_memory_budget = budget
        variants.append(Variant("compiled", "torch.compile",
                                torch.compile(copy.deepcopy(case.model))))
        if case.head:  # the same budget, the model's head fused into its loss
            variants.append(Variant("compiled" + FUSED, "torch.compile" + FUSED,
                                    torch.compile(fused_head(copy.deepcopy(case.model),
                                                             case.head)), own_loss=True))
    net = with_loss(case)  # one module: its plans share one capture
    for b in plan_budgets:
        p = chainplan.plan(run_id, budget=b)
        variants.append(Variant(f"chainplan @ {b}", "chainplan + compile",
                                torch.compile(p.wrap(net)), budget=p.budget_bytes,
                                predicted=p.peak_bytes, own_loss=net is not case.model))
    time_rounds(variants, case, 1)  # compile first, then measure compiled memory
    measure_peaks(variants, case)
    time_rounds(variants, case, rounds)
    return {"plain_ms": plain.ms, "rows": [
        {"name": v.name, "peak": v.peak, "ms": v.ms, "budget": v.budget} for v in variants[1:]]}


def spread(values: list[int], k: int) -> list[int]:
    """k of the sorted values, from the first to the last, evenly spaced (all when k is 0 or
    at least their number)."""
    if k <= 0 or k >= len(values):
        return values
    if k == 1:
        return [values[0]]
    return sorted({values[round(i * (len(values) - 1) / (k - 1))] for i in range(k)})


def bench_compile(res: Result, size: str, rounds: int, device: str, plans_kept: int) -> None:
    def sub(budget: float, plans: list[int]) -> dict[str, object]:
        cmd = [sys.executable, __file__, "--compile-run", res.name, "--size", size,
               "--compile-budget",
               str(budget), "--rounds", str(rounds), "--device", device,
               "--clock", CLOCK_NAME[0], "--run-id", str(res.prof.run_id), "--plan-budgets",
               ",".join(str(b) for b in plans)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:  # the child's own error, not only its exit status
            sys.stderr.write(out.stderr)
            raise SystemExit(f"bench/promise: the compiled run of {res.name} at budget {budget} "
                             f"failed (exit {out.returncode}); its output is above")
        return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    for budget in (1.0, 0.5, 0.2, 0.05):
        r = sub(budget, [])
        for row in r["rows"]:  # type: ignore[union-attr]
            fused = FUSED if row["name"].endswith(FUSED) else ""  # type: ignore[index]
            res.compiled.append(Variant(f"torch.compile, budget {budget}{fused}",
                                        "torch.compile" + fused, None, peak=row["peak"],
                                        ratio=row["ms"] / r["plain_ms"]))  # type: ignore[operator]
    plans = spread(sorted({v.budget for v in res.ours
                           if v.net is not None and v.budget and v.family == "chainplan"}),
                   plans_kept)
    r = sub(1.0, plans)
    for row in r["rows"]:  # type: ignore[union-attr]
        res.compiled.append(Variant(f"chainplan + compile @ {row['budget'] / 2**20:.1f} MiB",
                                    "chainplan + compile", None, peak=row["peak"],
                                    budget=row["budget"],
                                    ratio=row["ms"] / r["plain_ms"]))  # type: ignore[operator]


def frontier_name(stem: str) -> str:
    """The picture beside a report: promise-bench.md's is promise-frontier.svg,
    promise-bench-fused.md's promise-frontier-fused.svg, another report's STEM-frontier.svg
    (two reports in one folder never draw over each other's)."""
    if "-bench" in stem:
        return stem.replace("-bench", "-frontier", 1) + ".svg"
    return stem + "-frontier.svg"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT), help=f"of {', '.join(MODELS)}")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--compile-plans", type=int, default=0,
                    help="compile this many of chainplan's plans (0: all)")
    ap.add_argument("--size", choices=SIZES, default=SIZES[0],
                    help="the models' size: large for a GPU (bench/promise/models.py)")
    ap.add_argument("-o", "--output", default="")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="time steps by the wall clock or by the process's CPU time (a "
                    "one-thread CPU run on a shared host)")
    ap.add_argument("--compile-run", default="", help=argparse.SUPPRESS)
    ap.add_argument("--compile-budget", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--run-id", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--plan-budgets", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.clock == "cpu" and (args.device != "cpu" or args.threads != 1):
        ap.error("--clock cpu times one-thread CPU runs (--device cpu --threads 1): with more "
                 "threads the CPU time sums them, and a GPU's work is not the process's")
    global clock
    clock = CLOCKS[args.clock]
    CLOCK_NAME[0] = args.clock
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench/promise: --device cuda, but no CUDA device is present", file=sys.stderr)
        return 2
    if args.compile_run:
        budgets = [int(b) for b in args.plan_budgets.split(",") if b]
        print(json.dumps(compile_run(args.compile_run, args.size, args.compile_budget,
                                     args.rounds, args.device, args.run_id, budgets)))
        return 0
    t0 = time.perf_counter()
    results = []
    for name in args.models.split(","):
        torch.manual_seed(0)
        res = bench_model(name, to_device(MODELS[name](args.size), args.device), args.rounds)
        if args.compile:
            bench_compile(res, args.size, args.rounds, args.device, args.compile_plans)
        results.append(res)
        print(f"{name}: done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    header = (f"Generated by `.venv/bin/python bench/promise/main.py {' '.join(sys.argv[1:])}` "
              f"on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"{args.threads} thread(s), device {args.device}, torch {torch.__version__}, "
              f"steps timed by the {'process CPU time' if args.clock == 'cpu' else 'wall clock'}, "
              f"{time.strftime('%Y-%m-%d')}, in {time.perf_counter() - t0:.0f} s. Do not edit "
              "by hand.")
    out = Path(args.output) if args.output else None
    picture = out.with_name(frontier_name(out.stem)) if out else None
    text = summarize(results, header, args.rounds, picture)
    text += "".join(report_model(r) for r in results)
    print(text)
    if out:
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
