"""The result of a pipeline simulation (``chainplan.pipesim/v1``), typed.

:func:`chainplan.pipeline.pipesim` returns a :class:`Simulation`: what the Go simulator
(``planner/pipesim``) measured on a schedule, read field by field with errors naming the
field. docs/pipesim.md describes every figure. This module never imports torch.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chainplan.errors import PlanError, ScheduleError
from chainplan.jsonfields import Fields

__all__ = ["DeviceSim", "LinkSim", "MinibatchSim", "RankComparison", "Simulation", "StageSim"]

FORMAT = "chainplan.pipesim/v1"


@dataclass(frozen=True)
class StageSim:
    """What one stage did: layers ``first..last`` (1-based) on ``device``.

    Attributes:
        busy: time its device spent on its tasks (seconds; time points in unit time).
        bubble: idle share of the makespan; ``steady_bubble`` of a steady-state period.
        peak_inflight: most micro-batches whose activations it held at once.
        stored_bytes: what one micro-batch in flight keeps (bytes).
        peak_activation_bytes: most activation bytes it held, recomputed ones included.
        weight_versions: most weight versions it held at once.
    """

    stage: int
    first: int
    last: int
    device: int
    checkpointed: bool
    busy: float
    bubble: float
    steady_bubble: float
    peak_inflight: int
    stored_bytes: int
    peak_activation_bytes: int
    weight_versions: int


@dataclass(frozen=True)
class DeviceSim:
    """One device: its stages, busy time, static memory (weight copies and boundary
    buffers) and peak memory (bytes), and whether the peak fits the memory per device."""

    device: int
    stages: tuple[int, ...]
    busy: float
    bubble: float
    static_bytes: int
    peak_bytes: int
    fits: bool


@dataclass(frozen=True)
class LinkSim:
    """One link: its name (``link 0→1``, or ``link 0-1`` for a plan's shared link), its
    busy time and its share of the makespan."""

    name: str
    busy: float
    utilization: float


@dataclass(frozen=True)
class MinibatchSim:
    """One mini-batch (numbered from 1): its times and weight versions.

    Attributes:
        forward_versions: the version (updates applied) each micro-batch's forward used.
        backward_version: the version its backward used.
        version_difference: v = index − backward_version; ``staleness`` is v − 1.
        chain: the first mini-batch of its sequence of updates.
    """

    index: int
    start: float
    forward_end: float
    backward_start: float
    end: float
    forward_versions: tuple[int, ...]
    backward_version: int
    version_difference: int
    staleness: int
    chain: int


@dataclass(frozen=True)
class RankComparison:
    """One rank of a stored execution of a plan beside the simulation of the same step
    (seconds and bytes; NaN where a side has no figure)."""

    plan_id: int
    execution_id: int
    rank: int
    schedule: str
    microbatches: int
    measured_step_s: float
    predicted_step_s: float
    measured_microbatch_s: float
    predicted_microbatch_s: float
    measured_peak_bytes: int
    predicted_peak_bytes: int


def _nan(f: Fields, key: str) -> float:
    return f.number(key) if f.has(key) else math.nan


def _stage(s: Fields) -> StageSim:
    return StageSim(
        stage=s.integer("stage", low=0), first=s.integer("first", low=1),
        last=s.integer("last", low=1), device=s.integer("device", low=0),
        checkpointed=s.boolean("checkpointed"), busy=s.number("busy"),
        bubble=s.number("bubble"), steady_bubble=s.number("steady_bubble"),
        peak_inflight=s.integer("peak_inflight", low=0),
        stored_bytes=s.integer("stored_bytes", low=0),
        peak_activation_bytes=s.integer("peak_activation_bytes", low=0),
        weight_versions=s.integer("weight_versions", low=1))


def _minibatch(m: Fields) -> MinibatchSim:
    return MinibatchSim(
        index=m.integer("minibatch", low=1), start=m.number("start"),
        forward_end=m.number("forward_end"), backward_start=m.number("backward_start"),
        end=m.number("end"), forward_versions=tuple(int(v) for v in m.numbers("forward_versions")),
        backward_version=m.integer("backward_version", low=0),
        version_difference=m.integer("version_difference", low=1),
        staleness=m.integer("staleness", low=0), chain=m.integer("chain", low=1))


def _comparison(c: Fields) -> RankComparison:
    return RankComparison(
        plan_id=c.integer("plan_id"), execution_id=c.integer("execution_id"),
        rank=c.integer("rank", low=0), schedule=c.string("schedule"),
        microbatches=c.integer("microbatches", low=1),
        measured_step_s=_nan(c, "measured_step_s"), predicted_step_s=_nan(c, "predicted_step_s"),
        measured_microbatch_s=_nan(c, "measured_microbatch_s"),
        predicted_microbatch_s=_nan(c, "predicted_microbatch_s"),
        measured_peak_bytes=c.integer("measured_peak_bytes", low=0),
        predicted_peak_bytes=c.integer("predicted_peak_bytes", low=0))


@dataclass(frozen=True)
class Simulation:
    """A simulated schedule: ``minibatches`` mini-batches of ``microbatches`` micro-batches.

    Attributes:
        schedule: ``gpipe``, ``1f1b-flush``, ``pipedream-async``, ``2bw``, ``timeprest``
            or ``periodic``.
        stages: each stage's ``(first, last, device)`` (layers 1-based, inclusive).
        makespan: end of the last task (seconds; time points in unit time).
        period: steady-state time per mini-batch; ``microbatch_period`` per micro-batch;
            ``plan_period`` a replayed plan's period (0 otherwise).
        version_difference: v in the steady state (1: synchronous); ``max_staleness`` the
            largest v − 1; ``chains`` the independent sequences of updates;
            ``paper_version_difference`` TiMePReSt's closed form (0 for other schedules).
        warnings: sentences for the user (multiple-sequence problem, memory overflow, ...).
        run_id, simulation_id: where the simulation was recorded (simulated from a stored
            run or plan), else None.
        comparisons: the pipeline runner's stored measurements beside the simulation.
        trace: the Chrome trace (a dict), when asked for.
        svg: the Gantt picture, when asked for.
    """

    schedule: str
    microbatches: int
    minibatches: int
    unit_time: bool
    links: bool
    stages: tuple[tuple[int, int, int], ...]
    makespan: float
    period: float
    microbatch_period: float
    plan_period: float
    memory_bytes: int
    per_stage: tuple[StageSim, ...]
    per_device: tuple[DeviceSim, ...]
    per_link: tuple[LinkSim, ...]
    per_minibatch: tuple[MinibatchSim, ...]
    version_difference: int
    max_staleness: int
    chains: int
    paper_version_difference: int
    warnings: tuple[str, ...]
    run_id: int | None = None
    simulation_id: int | None = None
    comparisons: tuple[RankComparison, ...] = ()
    trace: dict[str, Any] | None = None
    svg: str | None = None

    @property
    def peak_bytes(self) -> int:
        """The largest device's peak memory (bytes)."""
        return max(d.peak_bytes for d in self.per_device)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Simulation:
        """Read ``pybind.Pipesim``'s answer: ``{"simulation": {...}, "trace", "svg",
        "run_id", "simulation_id", "comparisons"}``.

        Raises:
            ScheduleError: a field is missing or of the wrong type (the message names it).
        """
        top = Fields(doc)
        f = top.object("simulation")
        if f is None:
            raise ScheduleError("simulation: missing")
        f.format_tag(FORMAT)
        stages = tuple((s.integer("first", low=1), s.integer("last", low=1),
                        s.integer("gpu", low=0)) for s in f.objects("stages"))
        per_stage = tuple(_stage(s) for s in f.objects("per_stage"))
        per_device = tuple(DeviceSim(
            device=d.integer("device", low=0),
            stages=tuple(int(x) for x in d.numbers("stages")), busy=d.number("busy"),
            bubble=d.number("bubble"), static_bytes=d.integer("static_bytes", low=0),
            peak_bytes=d.integer("peak_bytes", low=0), fits=d.boolean("fits"))
            for d in f.objects("per_device"))
        per_link = tuple(LinkSim(name=x.string("name"), busy=x.number("busy"),
                                 utilization=x.number("utilization"))
                         for x in f.objects("per_link"))
        per_minibatch = tuple(_minibatch(m) for m in f.objects("per_minibatch"))
        comparisons = tuple(_comparison(c) for c in top.objects("comparisons"))
        trace = top.obj.get("trace")
        if trace is not None and not isinstance(trace, dict):
            raise ScheduleError(f"trace: want an object (got {type(trace).__name__})")
        return cls(
            schedule=f.string("schedule"), microbatches=f.integer("microbatches", low=1),
            minibatches=f.integer("minibatches", low=1), unit_time=f.boolean("unit_time"),
            links=f.boolean("links"), stages=stages, makespan=f.number("makespan"),
            period=f.number("period"), microbatch_period=f.number("microbatch_period"),
            plan_period=f.number("plan_period", 0.0), memory_bytes=f.integer("memory_bytes", 0),
            per_stage=per_stage, per_device=per_device, per_link=per_link,
            per_minibatch=per_minibatch,
            version_difference=f.integer("version_difference", low=1),
            max_staleness=f.integer("max_staleness", low=0), chains=f.integer("chains", low=1),
            paper_version_difference=f.integer("paper_version_difference", 0),
            warnings=tuple(str(w) for w in f.items("warnings")),
            run_id=top.integer("run_id") if top.has("run_id") else None,
            simulation_id=top.integer("simulation_id") if top.has("simulation_id") else None,
            comparisons=comparisons, trace=trace,
            svg=top.string("svg") if top.has("svg") else None)

    def write_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the Chrome trace (for ``chrome://tracing`` or Perfetto) to ``path``.

        Raises:
            PlanError: the simulation was run without ``trace=``.
        """
        if self.trace is None:
            raise PlanError("this simulation kept no trace: call pipesim(..., trace=True or a "
                            "path)")
        Path(path).write_text(json.dumps(self.trace), encoding="utf-8")

    def __str__(self) -> str:
        unit = " time points" if self.unit_time else " s"
        lines = [f"{self.schedule}: {len(self.stages)} stages, {self.microbatches} micro-batches "
                 f"per mini-batch, {self.minibatches} mini-batches; makespan "
                 f"{self.makespan:.6g}{unit}, period {self.period:.6g}{unit} per mini-batch, "
                 f"v = {self.version_difference}"]
        lines += [f"  stage {s.stage} (layers {s.first}-{s.last}, device {s.device}): bubble "
                  f"{s.steady_bubble:.3f}, {s.peak_inflight} in flight, "
                  f"{s.weight_versions} weight version(s)" for s in self.per_stage]
        lines += [f"  device {d.device}: peak {d.peak_bytes / 2**20:.1f} MiB"
                  for d in self.per_device]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_svg_(self) -> str | None:
        return self.svg
