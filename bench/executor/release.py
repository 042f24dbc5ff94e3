"""What the input release costs and where chainplan's sequential trails PyTorch's (issue 9).

Two measurements quoted in docs/executors.md, run from the repository root after
``make bind``:

    .venv/bin/python bench/executor/release.py

* **cost per stage**: a chain of 96 one-layer stages (Linear, BatchNorm1d, ReLU of width
  16, batch 8) under a store-all plan, timed with and without the input release
  (``chainplan.executors.inputrelease``) against the plain model, alternating;
* **sequential against checkpoint_sequential** on the promise benchmark's CNN flattened into
  26 stages, at 8 segments: step times, alternating, and the convolution kernels each runs
  per step, counted with ``torch.profiler``.

CPU, one thread; medians over the rounds.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "promise"))
os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.db"))

from models import cnn_head  # noqa: E402

import chainplan  # noqa: E402
from chainplan.stages import flatten_stages  # noqa: E402
from tests.models import CheckpointSequential  # noqa: E402


def alternate(variants: dict[str, Callable[[], None]], rounds: int,
              steps: int) -> dict[str, float]:
    """Median seconds per call of each variant, the variants alternating every round."""
    for fn in variants.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            for _ in range(steps):
                fn()
            times[name].append((time.perf_counter() - t0) / steps)
    return {k: statistics.median(v) for k, v in times.items()}


def release_cost() -> None:
    layers: list[nn.Module] = []
    for _ in range(32):
        layers += [nn.Linear(16, 16), nn.BatchNorm1d(16), nn.ReLU()]
    model, x = nn.Sequential(*layers), torch.randn(8, 16)

    def loss(o: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
        return o.square().mean()

    prof = chainplan.profile(model, x, loss_fn=loss, target=x, repeats=1, warmup=0,
                             progress=False, spread_warning=None)
    plan = chainplan.plan(prof, budget="min", algo="store-all")
    on, off = plan.wrap(model), plan.wrap(model)
    off.release_after = frozenset()  # the same executor, releasing nothing
    nets = {"plain": model, "release": on, "no release": off}
    t = alternate({k: (lambda n=n: n(x).square().mean().backward()) for k, n in nets.items()},
                  rounds=15, steps=20)
    print(f"## Input release, {len(model)} one-layer stages, store-all\n")
    print("| variant | ms per step | µs per stage over plain |")
    print("|---|---|---|")
    for k, v in t.items():
        print(f"| {k} | {v * 1e3:.2f} | {(v - t['plain']) / len(model) * 1e6:.1f} |")


def sequential_gap(segments: int = 8) -> None:
    model, x, y, loss_fn = cnn_head()
    model = nn.Sequential(*flatten_stages(model)).train()
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=2, warmup=1,
                             progress=False, spread_warning=None)
    nets = {"checkpoint_sequential": CheckpointSequential(model, segments),
            "chainplan sequential": chainplan.plan(prof, budget="1TiB", algo="sequential",
                                                   segments=segments).wrap(model)}

    def step(net: nn.Module) -> None:
        loss_fn(net(x), y).backward()
        model.zero_grad(set_to_none=True)

    t = alternate({k: (lambda n=n: step(n)) for k, n in nets.items()}, rounds=5, steps=1)
    print(f"\n## {len(model)}-stage CNN, {segments} segments\n")
    print("| variant | ms per step | convolution kernels per step |")
    print("|---|---|---|")
    for k, n in nets.items():
        with profile(activities=[ProfilerActivity.CPU]) as p:
            step(n)
        # The kernel, not aten::convolution: checkpoint_sequential's early stop interrupts a
        # recomputed convolution when it saves its input, before the kernel runs.
        convs = sum(e.count for e in p.key_averages() if e.key == "aten::mkldnn_convolution")
        print(f"| {k} | {t[k] * 1e3:.1f} | {convs} |")


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, CPU, 1 thread\n")
    release_cost()
    sequential_gap()


if __name__ == "__main__":
    main()
