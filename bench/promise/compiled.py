"""chainplan + torch.compile against torch.compile alone, in one process.

For each model of bench/promise/models.py: the eager plain step, ``torch.compile(model)``
(the default ``activation_memory_budget``), and chainplan's store-all and smallest plans
(``--plans K``: K plans spread from the smallest budget to store-all), each eager
(``plan.wrap(model)``) and compiled (``torch.compile(plan.wrap(model))``). Every variant is
timed in one process with alternating rounds (the median over the rounds); ratios are to
the eager plain step and to ``torch.compile(model)``. Peaks from ``chainplan.measure``
after compilation. For each compiled variant, what Dynamo did: the graphs it made, and the
frames it was asked to convert in a step after the first (0 when a step runs cached code
only).

``--size tiny`` is the tests' GPT (width 32, 4 blocks, sequence 16, batch 2), or with
``--models llama`` the tests' Llama (width 32, 4 layers, sequence 16, batch 2; no dropout,
so its recomputations run as compiled regions, :mod:`chainplan.executors.regions`, where
the GPT's dropout keeps them stage by stage): on a CPU its step is a few milliseconds,
bound by what runs on the host per stage as a small model's step on a GPU is by kernel
launches, which is where a compiled plan pays for every region it compiles. Run from the
repository root after ``make bind``::

    .venv/bin/python bench/promise/compiled.py [--models gpt|llama] [--size tiny|small|large]
        [--rounds 21] [--plans 2] [--device cpu|cuda] [--backend inductor]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))

from main import measure_peaks, spread, time_rounds, to_device  # noqa: E402  (private DB)
from models import MODELS, SIZES, Bench  # noqa: E402
from report import Variant  # noqa: E402

import chainplan  # noqa: E402

TINY = "tiny"


def tiny_gpt() -> Bench:
    from tests.graph.models import make_gpt

    case = make_gpt(batch=2, seq=16, blocks=4)
    return Bench(case.model, case.args, case.kwargs, case.loss_fn, case.target,
                 [f"blocks.{i}" for i in range(4)], transformer=True)


def tiny_llama() -> Bench:
    from tests.graph.models import make_llama

    case = make_llama(batch=2, seq=16)
    return Bench(case.model, case.args, case.kwargs, case.loss_fn, case.target,
                 [f"layers.{i}" for i in range(4)], transformer=True)


TINY_MODELS = {"gpt": tiny_gpt, "llama": tiny_llama}


def dynamo_counts(v: Variant, case: Bench) -> tuple[int, int]:
    """The graphs Dynamo made so far, and the frames it converts in one more step."""
    from torch._dynamo import utils as dynamo_utils
    from torch._dynamo.utils import counters

    before = dynamo_utils.curr_frame
    case.loss_fn(v.net(*case.args, **case.kwargs), case.target).backward()
    for p in v.net.parameters():
        p.grad = None
    return counters["stats"]["unique_graphs"], dynamo_utils.curr_frame - before


def bench(name: str, size: str, device: str, rounds: int, plans: int,
          backend: str) -> list[str]:
    torch.manual_seed(0)
    case = to_device(TINY_MODELS[name]() if size == TINY else MODELS[name](size), device)
    case.model.train()
    prof = chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             repeats=5, warmup=2, progress=False, name=name,
                             spread_warning=None, **case.kwargs)
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    budgets = spread(sorted({lo + (hi - lo) * j // 8 for j in range(9)}), plans)
    plain = Variant("plain", "plain", case.model)
    variants = [plain, Variant("torch.compile(model)", "torch.compile",
                               torch.compile(copy.deepcopy(case.model), backend=backend))]
    stats: dict[str, tuple[int, int]] = {}
    for b in budgets:
        p = chainplan.plan(prof, budget=b)
        label = "store-all" if b == hi else ("smallest" if b == lo else "")
        label = f"{label} {b / 2**10:.0f} KiB".strip()
        variants.append(Variant(f"chainplan {label}, eager", "chainplan", p.wrap(case.model),
                                budget=p.budget_bytes, predicted=p.peak_bytes))
        variants.append(Variant(f"chainplan {label}, compiled", "chainplan + compile",
                                torch.compile(p.wrap(case.model), backend=backend),
                                budget=p.budget_bytes, predicted=p.peak_bytes))
    for v in variants:  # compile (each its own counters), then one step to count
        if v.family in ("torch.compile", "chainplan + compile"):
            from torch._dynamo.utils import counters

            counters.clear()
            time_rounds([v], case, 1)
            stats[v.name] = dynamo_counts(v, case)
    time_rounds(variants, case, 1)
    measure_peaks(variants, case)
    time_rounds(variants, case, rounds)
    alone = variants[1].ms
    unit, scale = ("KiB", 2**10) if plain.peak < 10 * 2**20 else ("MiB", 2**20)
    out = [f"\n### {name} ({size}, {device}, {prof.num_stages} stages, backend {backend}, "
           f"{rounds} rounds)\n",
           f"| variant | budget {unit} | measured peak {unit} | step ms | / plain | "
           "/ torch.compile(model) | Dynamo graphs | frames converted per later step |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        g, f = stats.get(v.name, ("", ""))
        budget = f"{v.budget / scale:.1f}" if v.budget else ""
        out.append(f"| {v.name} | {budget} | {v.peak / scale:.1f} | {v.ms:.2f} | "
                   f"{v.ms / plain.ms:.3f} | {v.ms / alone:.3f} | {g} | {f} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--models", default="gpt")
    ap.add_argument("--size", choices=(*SIZES, TINY), default=TINY)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--plans", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--backend", default="inductor")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    unknown = [m for m in args.models.split(",") if m not in TINY_MODELS]
    if args.size == TINY and unknown:
        print(f"bench/promise/compiled.py: --size tiny has {', '.join(TINY_MODELS)} only, "
              f"not {', '.join(unknown)}", file=sys.stderr)
        return 2
    lines: list[Any] = []
    for name in args.models.split(","):
        lines += bench(name, args.size, args.device, args.rounds, args.plans, args.backend)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
