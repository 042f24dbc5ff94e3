"""Executor benchmarks (issue notes): plan()/Checkpointed overhead on a cached plan,
profiling time as a multiple of a training step, and rotor against the best
checkpoint_sequential at the same measured peak.

Run from the repository root after `make bind`:

    CHAINPLAN_DB=/tmp/bench.db .venv/bin/python bench/executor/main.py

Everything runs on the CPU with one thread (steady timings on a shared 2-core machine).
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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.db"))

from train_demo import small_cnn  # noqa: E402

import chainplan  # noqa: E402
from chainplan.executors import CheckpointedChain, planned  # noqa: E402
from chainplan.stages import flatten_stages  # noqa: E402


def median_time(fn: Callable[[], None], reps: int) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def transformer_stack(layers: int = 28) -> tuple[nn.Sequential, torch.Tensor]:
    blocks = [nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.1,
                                         batch_first=True) for _ in range(layers)]
    return nn.Sequential(nn.Linear(64, 128), *blocks, nn.Flatten(), nn.Linear(128 * 32, 10)), \
        torch.randn(16, 32, 64)


def overhead() -> None:
    """Per-step cost of Checkpointed's cache lookup and of the executor's bookkeeping."""
    model, x = small_cnn(), torch.randn(8, 3, 32, 32)
    net = chainplan.Checkpointed(model, budget="min")
    net(x).sum().backward()  # first call: profile and plan
    direct = planned(net).executor(x)  # type: ignore[union-attr]

    def via_checkpointed() -> None:
        net(x)

    def via_executor() -> None:
        direct(x)

    n = 200
    with torch.enable_grad():
        a = median_time(via_checkpointed, n)
        b = median_time(via_executor, n)
    t0 = time.perf_counter()
    for _ in range(10000):
        planned(net).executor(x)  # type: ignore[union-attr]
    lookup = (time.perf_counter() - t0) / 10000
    print(f"Checkpointed forward {a * 1e3:.3f} ms, executor forward {b * 1e3:.3f} ms, "
          f"cached-plan lookup {lookup * 1e6:.2f} µs per step")


def profiling_cost(model: nn.Sequential, x: torch.Tensor, name: str) -> None:
    def step() -> None:
        model(x).square().mean().backward()

    t = median_time(step, 5)
    prof = chainplan.profile(model, x, repeats=5, warmup=2, progress=False)
    print(f"{name}: {prof.num_stages} stages, one step {t * 1e3:.1f} ms, profiling "
          f"{prof.seconds:.2f} s = {prof.seconds / t:.0f} steps (repeats=5, warmup=2)")


def rotor_vs_sequential(model: nn.Sequential, x: torch.Tensor, name: str) -> None:
    prof = chainplan.profile(model, x, repeats=3, warmup=1, progress=False)
    stages = flatten_stages(model)
    lo = chainplan.plan(prof, budget="min", algo="sequential").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    print(f"{name}: sequential from {lo / 2**20:.1f} MiB, store-all {hi / 2**20:.1f} MiB")
    print(f"  {'segments':>8} {'seq peak MiB':>12} {'seq ms':>8} {'rotor peak MiB':>14} "
          f"{'rotor ms':>9} {'rotor/seq':>9}")
    ratios = []
    seen = set()
    for k in range(2, 2 * int(len(stages) ** 0.5) + 1):
        try:
            sp = chainplan.plan(prof, budget=hi, algo="sequential", segments=k)
        except chainplan.ChainplanError:
            continue
        net = CheckpointedChain(stages, sp)
        es = chainplan.measure(net, x, plan=sp, steps=5, store=False)
        if es.peak_bytes in seen:
            continue
        seen.add(es.peak_bytes)
        try:
            rp = chainplan.plan(prof, budget=es.peak_bytes)
        except chainplan.InfeasibleBudget:
            continue
        er = chainplan.measure(CheckpointedChain(stages, rp), x, plan=rp, steps=5, store=False)
        model.zero_grad(set_to_none=True)
        ratios.append(er.step_time_s / es.step_time_s)
        print(f"  {k:8d} {es.peak_bytes / 2**20:12.2f} {es.step_time_s * 1e3:8.1f} "
              f"{er.peak_bytes / 2**20:14.2f} {er.step_time_s * 1e3:9.1f} {ratios[-1]:9.3f}")
    if ratios:
        print(f"  geometric mean rotor/sequential step time: "
              f"{statistics.geometric_mean(ratios):.3f}")


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, CPU, 1 thread")
    overhead()
    profiling_cost(*transformer_stack(28), "transformer stack (30 stages)")
    profiling_cost(small_cnn(), torch.randn(32, 3, 32, 32), "demo CNN")
    rotor_vs_sequential(small_cnn(), torch.randn(32, 3, 32, 32), "demo CNN")
    rotor_vs_sequential(*transformer_stack(12), "transformer stack (14 stages)")


if __name__ == "__main__":
    main()
