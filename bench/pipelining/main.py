"""chainplan's pipeline executor against torch's own schedules, on the CPU (gloo).

For an MLP chain on P ranks: every rank profiles the chain at the micro-batch size at the
same time (so the profile sees the cores shared as the run will), rank 0 asks the Go
planners for plans (contiguous with ample memory, contiguous at its smallest memory,
madpipe at that memory), and every plan runs with its own order (``schedule="plan"``) and,
where its partition is one stage per rank, with torch's ``Schedule1F1B`` and
``ScheduleGPipe`` on the same partition. The variants alternate round by round; each round
measures a few steps (:meth:`chainplan.pipeline.PipelineRunner.measure`). The table gives
the median step time, the steady-state time per micro-batch against the plan's period (for
the plan's own order only: a built-in schedule in another order has no such window), the
largest rank's peak memory against the plan's, and the step time relative to the plan's
order on the same partition; above it, the same micro-batches run in one process.

Usage, from the repository root (about a minute on two cores)::

    .venv/bin/python bench/pipelining/main.py [--ranks 4] [--microbatches 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import chainplan
from chainplan.pipeline import PipelinePlan, pipeline_plan, reference_step

#: Hidden width of each residual block, in multiples of the model width: two heavy blocks
#: make the best partition uneven, where a device holding two stages can pay off.
HIDDEN = (2, 2, 8, 2, 2, 8, 2, 2)


def mlp(width: int) -> nn.Sequential:
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, hidden: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, hidden),
                                      nn.GELU(), nn.Linear(hidden, width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    return nn.Sequential(*[Block(h * width) for h in HIDDEN])


def plans(prof: Any, ranks: int, microbatches: int) -> list[tuple[str, PipelinePlan]]:
    bw = "1GB/s"
    tight = pipeline_plan(prof, gpus=ranks, memory="min", bandwidth=bw, algo="contiguous",
                          microbatches=microbatches)
    out = [("contiguous, ample memory",
            pipeline_plan(prof, gpus=ranks, memory="1GiB", bandwidth=bw, algo="contiguous",
                          microbatches=microbatches)),
           ("contiguous, smallest memory", tight)]
    for label, memory in [("madpipe, ample memory", "1GiB"),
                          ("madpipe, smallest contiguous memory", tight.memory_bytes)]:
        try:
            out.append((label, pipeline_plan(prof, gpus=ranks, memory=memory, bandwidth=bw,
                                             algo="madpipe", microbatches=microbatches,
                                             time_limit_s=10)))
        except chainplan.ChainplanError as e:
            print(f"{label}: {e}", flush=True)
    return out


def rank_main(rank: int, args: argparse.Namespace, port: int, tmp: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      CHAINPLAN_DB=str(Path(tmp, f"rank{rank}.db")))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    model = mlp(args.width)
    mb = args.microbatch_size
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(mb * args.microbatches, args.width, generator=gen)
    y = torch.randn(mb * args.microbatches, args.width, generator=gen)
    loss_fn = nn.functional.mse_loss
    # Every rank profiles at once: the profile sees the cores as busy as the run makes them.
    prof = chainplan.profile(model, x[:mb], loss_fn=loss_fn, target=y[:mb], spread_warning=None)
    shared: list[Any] = [plans(prof, args.ranks, args.microbatches) if rank == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    # The same micro-batches in one process, while the other ranks wait: the work to share.
    seq = []
    for _ in range(args.rounds):
        dist.barrier()
        if rank == 0:
            t0 = time.perf_counter()
            reference_step(model, x, target=y, loss_fn=loss_fn, microbatches=args.microbatches)
            seq.append(time.perf_counter() - t0)
            model.zero_grad(set_to_none=True)
    rows = []
    for label, plan in shared[0]:
        variants = {"plan": plan.runner(model, loss_fn=loss_fn, schedule="plan")}
        if plan.contiguous and len(plan.stages) == args.ranks:
            for s in ("1f1b", "gpipe"):
                variants[s] = plan.runner(model, loss_fn=loss_fn, schedule=s)
        got: dict[str, list[Any]] = {k: [] for k in variants}
        for _ in range(args.rounds):  # alternate, so that drifts in load hit all alike
            for name, runner in variants.items():
                got[name].append(runner.measure(x, target=y, steps=args.steps, store=False))
        rows.append((label, plan, got))
    if rank == 0:
        one = statistics.median(seq)
        print(f"one process, {args.microbatches} micro-batches: {one * 1e3:.1f} ms "
              f"({one / args.microbatches * 1e3:.2f} ms per micro-batch)\n", flush=True)
        print(table(rows), flush=True)
    dist.destroy_process_group()


def table(rows: list[tuple[str, PipelinePlan, dict[str, list[Any]]]]) -> str:
    out = ["| plan | stages@rank | schedule | step ms | per micro-batch ms | period ms | "
           "peak / plan memory | step vs plan |",
           "|---|---|---|---|---|---|---|---|"]
    for label, plan, got in rows:
        base = statistics.median(e.step_time_s for e in got["plan"])
        parts = " ".join(f"{s.first}-{s.last}@{s.gpu}" for s in plan.stages)
        for name, exs in got.items():
            step = statistics.median(e.step_time_s for e in exs)
            # Only a schedule in the plan's order has the plan's steady state to measure.
            per_mb = statistics.median(e.microbatch_time_s for e in exs)
            shown_mb = "—" if math.isnan(per_mb) else f"{per_mb * 1e3:.2f}"
            peak = max(e.peak_bytes for e in exs)
            shown = exs[0].schedule if name != "plan" else "plan"
            out.append(f"| {label} | {parts} | {shown} | {step * 1e3:.1f} | "
                       f"{shown_mb} | {plan.period * 1e3:.2f} | "
                       f"{peak / max(plan.memory_per_gpu):.2f} | {step / base:.2f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=16)
    ap.add_argument("--microbatch-size", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per round")
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(rank_main, args=(args, port, tmp), nprocs=args.ranks,
                           start_method="spawn")


if __name__ == "__main__":
    main()
