"""What a pipeline plan measured when it ran, and its record in the database.

Each rank measures its own stages: its step time (median over the timed steps), the steady
state time between micro-batches, and its peak memory. The time between micro-batches is
read from the forward start times of the rank's stages in the plan's steady periods
(:func:`chainplan.pipeline.order.steady_periods`): there every operation of the pattern
runs, one micro-batch per period, so the time between consecutive forwards of a stage is the
measured period, the quantity the plan's ``period`` predicts.

Peak memory is what the plan's ``memory_per_gpu`` predicts: weights, gradients, optimizer
state, boundary buffers, the activations of the rank's stages and what its operations hold
while they run. On CUDA it is the device's peak of allocated memory over a step; on the CPU,
which has no allocator counter, the parameters' and buffers' bytes of the rank's stages
(and the optimizer's state for them) plus the peak allocated above them during a step
(:class:`~chainplan.profiler.memory.MemoryProbe`; gradients are released before the step,
so they are allocated inside it). Each rank's peak is checked against the plan: above
``memory_bytes`` (the device) a :class:`MemoryWarning` names the rank; an optimizer whose
state the plan's ``weight_copies`` does not cover is named too.

The database keeps one ``executions`` row per rank. A pipeline plan's row in ``plans`` has
the period in ``makespan_s`` and the memory per device in ``budget_bytes``, so the measured
counterparts go in the same places: ``step_time_s`` is the time per micro-batch in the
steady state (every row the same), ``peak_bytes`` the rank's peak, and ``plan_outcomes``
compares them as it does for every plan (``time_error`` against the period, ``fits`` for the
largest rank's peak against the memory per device). The optimizer step's time and the rest
go in ``metadata_json``; docs/pipeline.md lists the fields.
"""

from __future__ import annotations

import itertools
import math
import socket
import statistics
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.distributed as dist
from torch import nn

from chainplan import _bind
from chainplan.errors import ChainplanError, ChainplanWarning
from chainplan.pipeline.document import PipelineDocument
from chainplan.pipeline.order import steady_microbatches
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.summary import format_seconds

__all__ = ["LossFn", "Measured", "MemoryWarning", "PipelineExecution", "RankMeasure",
           "measure_runner", "record", "steady_time", "sync"]

LossFn = Callable[..., torch.Tensor]


class Measured(Protocol):
    """What :func:`measure_runner` reads of the runner it measures: a
    :class:`~chainplan.pipeline.runner.PipelineRunner` (named by its shape, so that this
    module, which the runner imports, does not import the runner back)."""

    rank: int
    world: int
    microbatches: int
    schedule: str

    @property
    def plan(self) -> PipelineDocument: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def group(self) -> Any: ...

    @property
    def plan_order(self) -> bool: ...

    @property
    def forward_starts(self) -> dict[tuple[int, int], float]: ...

    @property
    def stage_modules(self) -> Mapping[int, nn.Module]: ...

    def parameters(self) -> Iterator[nn.Parameter]: ...


class MemoryWarning(ChainplanWarning):
    """A rank's measured peak is above the plan's memory, or its optimizer keeps more
    copies of the weights than the plan counted."""


@dataclass(frozen=True)
class RankMeasure:
    """One rank's measurements.

    Attributes:
        rank: the rank (the plan's GPU).
        device: where its stages ran (``cpu``, ``cuda:0``).
        host: its host name.
        stages: the plan stages it ran.
        step_time_s: its median step time (seconds).
        microbatch_time_s: its steady-state time between micro-batches (seconds; NaN when
            the step is too short to have a steady state, when the rank is idle, or for a
            built-in schedule asked for whose order is not the plan's).
        peak_bytes: its peak memory over a step (bytes).
        predicted_bytes: the plan's memory for it (bytes).
    """

    rank: int
    device: str
    host: str
    stages: tuple[int, ...]
    step_time_s: float
    microbatch_time_s: float
    peak_bytes: int
    predicted_bytes: float


@dataclass(frozen=True)
class PipelineExecution:
    """A measured run of a pipeline plan, the same on every rank.

    Attributes:
        schedule: the schedule that ran (``plan``, ``Schedule1F1B``, ...).
        microbatches: micro-batches per step.
        steps: timed steps.
        step_time_s: the slowest rank's median step time (seconds): one optimizer step.
        microbatch_time_s: the median over ranks of the steady-state time between
            micro-batches (seconds; NaN without a steady state).
        predicted_period_s: the plan's period (seconds for profiles taken by chainplan).
        ranks: each rank's measurements.
        execution_ids: the ``executions`` rows recorded (one per rank), when recorded.
    """

    schedule: str
    microbatches: int
    steps: int
    step_time_s: float
    microbatch_time_s: float
    predicted_period_s: float
    ranks: tuple[RankMeasure, ...]
    execution_ids: tuple[int, ...] = ()

    memory_bytes: int = 0

    @property
    def peak_bytes(self) -> int:
        """The largest rank's peak memory (bytes)."""
        return max(r.peak_bytes for r in self.ranks)

    @property
    def fits(self) -> bool:
        """Whether every rank's measured peak is within the plan's memory per device."""
        return all(r.peak_bytes <= self.memory_bytes for r in self.ranks) \
            if self.memory_bytes else True

    @property
    def within_prediction(self) -> bool:
        """Whether every rank's measured peak is within what the plan predicted for it
        (``memory_per_gpu``)."""
        return all(r.peak_bytes <= r.predicted_bytes for r in self.ranks)

    def __str__(self) -> str:
        if math.isnan(self.microbatch_time_s):  # record() stores the step's share then
            share = format_seconds(self.step_time_s / self.microbatches)
            per_mb = (f"no steady state to time (too few micro-batches, or a schedule other "
                      f"than the plan's order), {share} per micro-batch over the whole step")
        else:
            per_mb = (f"{format_seconds(self.microbatch_time_s)} per micro-batch in the steady "
                      f"state")
        lines = [f"{self.schedule}, {self.microbatches} micro-batches: step "
                 f"{format_seconds(self.step_time_s)}, {per_mb} (the plan's period: "
                 f"{format_seconds(self.predicted_period_s)} per micro-batch)"]
        lines += [f"  rank {r.rank}: peak {r.peak_bytes / 2**20:.1f} MiB (plan "
                  f"{r.predicted_bytes / 2**20:.1f} MiB, "
                  f"{r.peak_bytes / max(r.predicted_bytes, 1):.2f}x), stages {list(r.stages)}"
                  for r in self.ranks]
        return "\n".join(lines)


def steady_time(plan: PipelineDocument, microbatches: int,
                starts: dict[tuple[int, int], float], stages: Sequence[int]) -> float:
    """The mean time between consecutive forwards of ``stages`` in the steady periods.

    Args:
        starts: the forward start time of each ``(stage, micro-batch)`` (seconds).

    Returns:
        Seconds per micro-batch, or NaN when no stage has two forwards in steady periods.
    """
    slopes = []
    for k in stages:
        bs = steady_microbatches(plan, microbatches, k)
        if len(bs) >= 2 and (k, bs[0]) in starts and (k, bs[-1]) in starts:
            slopes.append((starts[k, bs[-1]] - starts[k, bs[0]]) / (len(bs) - 1))
    return statistics.fmean(slopes) if slopes else math.nan


def record(plan: PipelineDocument, ex: PipelineExecution) -> tuple[int, ...]:
    """Store ``ex`` as executions of ``plan`` (one row per rank); returns the row ids.

    Raises:
        ChainplanError: the plan is not stored (no ``plan_id``), or the Go side refused.
    """
    if plan.plan_id is None:
        raise ChainplanError("the plan is not stored (no plan_id): nothing to record against")
    per_mb, source = ex.microbatch_time_s, "steady"
    if math.isnan(per_mb):  # no steady state: the whole step per micro-batch
        per_mb, source = ex.step_time_s / ex.microbatches, "step"
    ids = []
    for r in ex.ranks:
        meta = {
            "kind": "pipeline", "microbatch_time_from": source,
            "optimizer_step_time_s": ex.step_time_s,
            "rank": r.rank, "world_size": len(ex.ranks),
            "host": r.host, "stages": ",".join(str(k) for k in r.stages),
            "schedule": ex.schedule, "microbatches": ex.microbatches,
            "rank_step_time_s": r.step_time_s, "microbatch_time_s": r.microbatch_time_s,
            "step_microbatch_time_s": ex.microbatch_time_s,
            "predicted_period_s": ex.predicted_period_s,
            "predicted_memory_bytes": r.predicted_bytes,
        }
        ids.append(_bind.record_execution(plan.plan_id, {
            "step_time_s": per_mb, "peak_bytes": r.peak_bytes, "steps": ex.steps,
            "device": r.device, "torch_version": torch.__version__,
            # The executions table keeps metadata as strings.
            "metadata": {k: repr(v) if isinstance(v, float) else str(v)
                         for k, v in meta.items()},
        }))
    return tuple(ids)


def _state_bytes(optimizer: torch.optim.Optimizer | None, params: Sequence[torch.Tensor]) -> int:
    """Bytes of the optimizer's state for ``params`` (momentum, Adam's moments)."""
    if optimizer is None:
        return 0
    mine = {id(p) for p in params}
    return sum(t.numel() * t.element_size() for p, st in optimizer.state.items()
               if id(p) in mine for t in st.values() if isinstance(t, torch.Tensor))


def _warm_up(runner: Measured, step: Callable[[], Any],
             optimizer: torch.optim.Optimizer | None) -> None:
    """One step before the measured one. On the CPU it runs under a probe too: the CPU
    allocator reports the frees of blocks a probe saw allocated, and the measured step frees
    what this one left (its last micro-batches' tensors, the optimizer's first state), which
    an unseen block's free would leave counted (profiler/memory.py).

    The gradients of an earlier step are released before that probe opens (the step would
    replace them at its start): freed inside it, they are blocks the allocator never saw
    allocated, and torch's CPU allocator then printed "Memory block of unknown size was
    allocated before the profiling started" on every rank's standard error."""
    if runner.device.type == "cuda":
        step()
        if optimizer is not None:
            optimizer.step()
        return
    for p in runner.parameters():  # as step() does first, but before the probe
        p.grad = None
    with MemoryProbe(device=runner.device):
        step()
        if optimizer is not None:
            optimizer.step()


def _peak_step(runner: Measured, step: Callable[[], Any],
               optimizer: torch.optim.Optimizer | None) -> int:
    """One step's peak memory on this rank (module docstring)."""
    device = runner.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        if optimizer is not None:
            optimizer.step()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device))
    params = list(runner.parameters())
    resident = sum(t.numel() * t.element_size() for module in runner.stage_modules.values()
                   for t in itertools.chain(module.parameters(), module.buffers()))
    resident += _state_bytes(optimizer, params)
    for module in runner.stage_modules.values():
        module.zero_grad(set_to_none=True)
    with MemoryProbe(device=device) as probe:
        step()
        if optimizer is not None:
            optimizer.step()
    return resident + int(probe.peak_bytes)


def _check(plan: PipelineDocument, ex: PipelineExecution, optimizer: torch.optim.Optimizer | None,
           params: Sequence[torch.Tensor]) -> None:
    """Warn about a rank above the plan's memory and an optimizer the plan did not count."""
    over = [r for r in ex.ranks if plan.memory_bytes and r.peak_bytes > plan.memory_bytes]
    if over:
        named = ", ".join(f"rank {r.rank} peaked at {r.peak_bytes} bytes" for r in over)
        warnings.warn(f"{named}, above the plan's {plan.memory_bytes} bytes per device: plan "
                      f"with headroom= (a share of the memory kept free) or more memory",
                      MemoryWarning, stacklevel=3)
    weights = sum(p.numel() * p.element_size() for p in params)
    if optimizer is not None and weights:
        extra = round(_state_bytes(optimizer, params) / weights)
        if 2 + extra > plan.weight_copies:
            warnings.warn(f"the optimizer keeps {extra} cop{'y' if extra == 1 else 'ies'} of the "
                          f"weights besides the weights and their gradients, but the plan counts "
                          f"{plan.weight_copies} copies in all: plan with weight_copies="
                          f"{2 + extra}", MemoryWarning, stacklevel=3)


def sync(device: torch.device) -> None:
    """Wait for the device's work (CUDA); nothing on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_runner(runner: Measured, step: Callable[[], Any], *, steps: int,
                   store: bool, optimizer: torch.optim.Optimizer | None) -> PipelineExecution:
    """Measure ``runner`` (see :meth:`PipelineRunner.measure
    <chainplan.pipeline.runner.PipelineRunner.measure>`): ``step`` runs one step of it."""
    plan = runner.plan
    _warm_up(runner, step, optimizer)
    peak = _peak_step(runner, step, optimizer)
    times, mb_times = [], []
    for _ in range(steps):
        dist.barrier(group=runner.group)
        t0 = time.perf_counter()
        step()
        sync(runner.device)
        times.append(time.perf_counter() - t0)
        mb_times.append(steady_time(plan, runner.microbatches, runner.forward_starts,
                                    list(runner.stage_modules)) if runner.plan_order else math.nan)
    mine = RankMeasure(runner.rank, str(runner.device), socket.gethostname(),
                       tuple(runner.stage_modules), statistics.median(times),
                       statistics.median(mb_times), peak, plan.memory_per_gpu[runner.rank])
    gathered: list[Any] = [None] * runner.world
    dist.all_gather_object(gathered, mine, group=runner.group)
    ranks = tuple(gathered)
    steady = [r.microbatch_time_s for r in ranks if not math.isnan(r.microbatch_time_s)]
    ex = PipelineExecution(runner.schedule, runner.microbatches, steps,
                           max(r.step_time_s for r in ranks),
                           statistics.median(steady) if steady else math.nan,
                           plan.period, ranks, memory_bytes=plan.memory_bytes)
    ids: list[Any] = [()]
    if runner.rank == 0 and store and plan.plan_id is not None:
        ids = [record(plan, ex)]
    dist.broadcast_object_list(ids, group_src=0, group=runner.group)
    _check(plan, ex, optimizer, list(runner.parameters()))
    return PipelineExecution(ex.schedule, ex.microbatches, ex.steps, ex.step_time_s,
                             ex.microbatch_time_s, ex.predicted_period_s, ex.ranks,
                             tuple(ids[0]), memory_bytes=plan.memory_bytes)
