"""What a pipeline plan measured when it ran, and its record in the database.

Each rank measures its own part: its step time (median over the timed steps), the steady
state time between micro-batches, and its peak memory. The time between micro-batches is
read from the forward start times of the rank's stages in the plan's steady periods
(:func:`chainplan.pipeline.order.steady_periods`): there every operation of the pattern
runs, one micro-batch per period, so the time between consecutive forwards of a stage is the
measured period, the quantity the plan's ``period`` predicts.

Peak memory is what the plan's ``memory_per_gpu`` predicts: weights, gradients, boundary
buffers and activations of the rank's stages. On CUDA it is the device's peak of allocated
memory over a step; on the CPU, which has no allocator counter, the parameters' and
buffers' bytes of the rank's stages plus the peak allocated above them during a step
(:class:`~chainplan.profiler.memory.MemoryProbe`; gradients are released before the step,
so they are allocated inside it).

The database keeps one ``executions`` row per rank. A pipeline plan's row in ``plans`` has
the period in ``makespan_s`` and the memory per device in ``budget_bytes``, so the measured
counterparts go in the same places: ``step_time_s`` is the time per micro-batch in the
steady state (every row the same), ``peak_bytes`` the rank's peak, and ``plan_outcomes``
compares them as it does for every plan (``time_error`` against the period, ``fits`` for the
largest rank's peak against the memory per device). The optimizer step's time and the rest
go in ``metadata_json``; docs/pipeline.md lists the fields.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from chainplan import _bind
from chainplan.pipeline.order import steady_microbatches
from chainplan.pipeline.plan import PipelinePlan

__all__ = ["LossFn", "PipelineExecution", "RankMeasure", "record", "steady_time"]

LossFn = Callable[..., torch.Tensor]


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

    @property
    def peak_bytes(self) -> int:
        """The largest rank's peak memory (bytes)."""
        return max(r.peak_bytes for r in self.ranks)

    def __str__(self) -> str:
        lines = [f"{self.schedule}, {self.microbatches} micro-batches: step "
                 f"{self.step_time_s * 1e3:.2f} ms, {self.microbatch_time_s * 1e3:.3f} ms per "
                 f"micro-batch (plan: period {self.predicted_period_s * 1e3:.3f} ms)"]
        lines += [f"  rank {r.rank}: peak {r.peak_bytes / 2**20:.1f} MiB (plan "
                  f"{r.predicted_bytes / 2**20:.1f} MiB), stages {list(r.stages)}"
                  for r in self.ranks]
        return "\n".join(lines)


def steady_time(plan: PipelinePlan, microbatches: int,
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


def record(plan: PipelinePlan, ex: PipelineExecution) -> tuple[int, ...]:
    """Store ``ex`` as executions of ``plan`` (one row per rank); returns the row ids.

    Raises:
        ChainplanError: the plan is not stored (no ``plan_id``), or the Go side refused.
    """
    from chainplan.errors import ChainplanError

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
