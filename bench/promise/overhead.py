"""Executor overhead: a plan that recomputes nothing (store-all) against the plain step.

For each model of bench/promise/models.py: the plain model and chainplan's store-all plan
(``chainplan.plan(prof, budget="min", algo="store-all").wrap(model)``), timed in one
process with alternating rounds (median over the rounds), and the plan's predicted step
time (its makespan: the profile's stage times, nothing for the executor) beside the
measured one. Run from the repository root after ``make bind``::

    .venv/bin/python bench/promise/overhead.py [--models gpt,llama,resnet,vit,cnn-head]
        [--rounds 21] [--device cpu|cuda] [--size small|large]

The issue 19 target: the store-all plan within 2 % of the plain step on every model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))

from main import step, time_rounds, to_device  # noqa: E402  (sets a private CHAINPLAN_DB)
from models import MODELS, SIZES  # noqa: E402
from report import Variant  # noqa: E402

import chainplan  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", choices=SIZES, default=SIZES[0])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print("| model | stages | plain ms | store-all plan ms | overhead | predicted ms "
          "| measured / predicted |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.models.split(","):
        torch.manual_seed(0)
        case = to_device(MODELS[name](args.size), args.device)
        case.model.train()
        prof = chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn,
                                 target=case.target, repeats=5, warmup=2, progress=False,
                                 name=name, spread_warning=None, **case.kwargs)
        plan = chainplan.plan(prof, budget="min", algo="store-all")
        plain = Variant("plain", "plain", case.model)
        ours = Variant("store-all", "chainplan", plan.wrap(case.model))
        step(ours, case)  # the executor's lazy capture, outside the timed rounds
        time_rounds([plain, ours], case, args.rounds)
        # per-round ratios: each round ran both one after the other on the same load
        ratios = [o / p for o, p in zip(ours.times, plain.times, strict=True)]
        over = statistics.median(ratios) - 1
        measured_ms = statistics.median(ours.times) * 1e3
        print(f"| {name} | {len(prof.stage_names)} | {statistics.median(plain.times) * 1e3:.1f} "
              f"| {measured_ms:.1f} | {over:+.1%} | {plan.makespan * 1e3:.1f} "
              f"| {measured_ms / (plan.makespan * 1e3):.2f} |", flush=True)


if __name__ == "__main__":
    main()
