"""Pipeline plans, typed: stages on devices and the periodic pattern that orders them.

A :class:`PipelineDocument` is the ``chainplan.pipeline/v1`` document of DESIGN.md ("Pipeline
plan") read with errors naming the field: a partition of the chain's layers into
:class:`PlanStage` s, each on one device (one device may hold several, not necessarily
adjacent, stages), and the 1-periodic :class:`PatternOp` pattern of one period (MadPipe
spec §1.4, paper convention): micro-batch ``b`` runs an operation at
``start + (b + shift) * period``. The executor (:mod:`chainplan.pipeline.runner`) turns the
pattern into each rank's action list (:mod:`chainplan.pipeline.order`).

The planner's words "mini-batch" and "GPU" are the executor's "micro-batch" and "rank": one
optimizer step pushes ``microbatches`` of them through the pattern and flushes.

This module never imports torch, nor any module that runs a plan: the executor's modules
read plans through it. :class:`chainplan.pipeline.plan.PipelinePlan`, what users hold, adds
to it how a plan is loaded from the store and run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self, cast

from chainplan import _bind
from chainplan.errors import PlanError, ScheduleError
from chainplan.jsonfields import Fields
from chainplan.pipeline.parts import (
    Link,
    OpName,
    PatternOp,
    PlanStage,
    Recompute,
    read_pattern,
    read_stages,
)
from chainplan.profiler.summary import format_seconds
from chainplan.svg import svg_or_none, write_svg

__all__ = ["FORMAT", "Link", "OpName", "PatternOp", "PipelineDocument", "PlanStage",
           "Recompute"]

#: The ``format`` every pipeline plan document carries.
FORMAT = "chainplan.pipeline/v1"
_ACTIVATION_MODELS: tuple[str, ...] = ("input", "saved")


@dataclass(frozen=True)
class PipelineDocument:
    """A pipeline plan: the partition, its devices, the periodic pattern and its memory.

    Attributes:
        algo: the planner (``madpipe``, ``contiguous``, ``pipedream``, ...).
        gpus: P, the number of devices (ranks) the plan runs on.
        memory_bytes: the memory per device the plan was computed for (bytes).
        bandwidth: the link bandwidth the plan assumed (bytes per second).
        weight_copies: copies of the weights each device keeps (2: weights and
            gradients, the synchronous executor's; one more per optimizer buffer).
        activation_model: how stored activations were counted (``input`` or ``saved``).
        period: T, the time between two micro-batches in the steady state.
        stages: the partition, in chain order.
        pattern: one period's operations.
        memory_per_gpu: the predicted peak memory of each device (bytes).
        contiguous: whether every device holds at most one stage.
        temporaries: whether ``memory_per_gpu`` counts the operations' temporaries, the
            gradients in flight and the loss (plans made before it existed did not).
        headroom: the share of ``memory_bytes`` the plan leaves free.
        checkpoint: whether stages could recompute (:attr:`PlanStage.recompute`).
        sequential_time: one device running the chain, U(1,L) (0 when not recorded).
        unconstrained_period: the period of the best contiguous plan without a memory
            limit (0 when not recorded).
        microbatches: micro-batches per optimizer step, when the plan was made for a
            number of them (``pipeline_plan(microbatches=N)``); else None.
        plan_id: the id of the plan in the database, when stored there.
        run_id: the id of the profile it was computed from, when stored.
        layer_param_bytes: the weights of each layer of the profiled chain (bytes), when
            known: the executor checks the model against them before any process waits.
        chosen: for a planner that compares candidates (``madpipe`` computes its own plan
            and the best contiguous one), the candidate this plan is; else empty.
        predicted_period: the period the partitioning step predicted before scheduling
            (MadPipe's phase 1 estimate), when the planner reports one; else 0.
        solve_ms: the planner's time (milliseconds).
        fallback: empty, or why the planner returned a weaker plan than the one asked for:
            ``"no-milp-solver"`` when MadPipe found no MILP solver to schedule its
            allocation and returned the best contiguous plan.
        notes: what the planner said about this plan (which candidate won, a solver it
            could not find); not part of the document.
        raw: the document as read; the typed attributes are the API.
    """

    algo: str
    gpus: int
    memory_bytes: int
    bandwidth: float
    weight_copies: int
    activation_model: str
    period: float
    stages: tuple[PlanStage, ...]
    pattern: tuple[PatternOp, ...]
    memory_per_gpu: tuple[float, ...]
    contiguous: bool
    microbatches: int | None = None
    temporaries: bool = False
    headroom: float = 0.0
    checkpoint: bool = False
    sequential_time: float = 0.0
    unconstrained_period: float = 0.0
    plan_id: int | None = None
    run_id: int | None = None
    layer_param_bytes: tuple[int, ...] | None = None
    chosen: str = ""
    predicted_period: float = 0.0
    solve_ms: float = 0.0
    fallback: str = ""
    notes: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def speedup(self) -> float:
        """The plan's speed-up over one device running the chain (``sequential_time /
        period``); 0 when the plan does not record the sequential time."""
        return self.sequential_time / self.period if self.sequential_time > 0 else 0.0

    @property
    def memory_cost(self) -> float:
        """``unconstrained_period / period``: 1 when the memory limit costs nothing, 0.5
        when the plan is twice as slow as the best contiguous plan without a limit; 0 when
        not recorded."""
        return self.unconstrained_period / self.period if self.unconstrained_period > 0 else 0.0

    @property
    def memory_limit(self) -> int:
        """The memory each device's plan fits: ``memory_bytes·(1 − headroom)`` (bytes)."""
        if not self.headroom:
            return self.memory_bytes
        return int(self.memory_bytes * (1 - self.headroom))

    @property
    def num_layers(self) -> int:
        """L, the number of layers of the chain (the loss not counted)."""
        return self.stages[-1].last

    @property
    def stage_gpus(self) -> tuple[int, ...]:
        """The device of each stage, in stage order (``[0, 1, 1, 0]``)."""
        return tuple(s.gpu for s in self.stages)

    def stages_on(self, gpu: int) -> tuple[PlanStage, ...]:
        """The stages device ``gpu`` runs, in chain order (empty for an idle device)."""
        return tuple(s for s in self.stages if s.gpu == gpu)

    @property
    def links(self) -> tuple[Link, ...]:
        """The links that carry activations, each with the boundaries crossing it."""
        found: dict[tuple[int, int], list[int]] = {}
        for a, b in zip(self.stages, self.stages[1:], strict=False):
            if a.gpu != b.gpu:
                pair = (min(a.gpu, b.gpu), max(a.gpu, b.gpu))
                found.setdefault(pair, []).append(a.index)
        return tuple(Link(pair, tuple(ks)) for pair, ks in sorted(found.items()))

    def op(self, name: OpName, stage: int) -> PatternOp | None:
        """The pattern's operation ``name`` of ``stage``, or None (no transfer there)."""
        for o in self.pattern:
            if o.op == name and o.stage == stage:
                return o
        return None

    @classmethod
    def from_json(cls, text: str | bytes, *, plan_id: int | None = None,
                  run_id: int | None = None, microbatches: int | None = None,
                  layer_param_bytes: Sequence[int] | None = None) -> Self:
        """Read a ``chainplan.pipeline/v1`` document, as ``chainplan pipeline`` prints it.

        The keyword arguments fill the attributes of the same names that the document does
        not hold (``microbatches`` overrides the document's when both are given).

        Raises:
            ScheduleError: the document is not a valid pipeline plan; the message names the
                field (``pattern[3].stage: ...``).
        """
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScheduleError(f"pipeline plan is not JSON ({e})") from e
        return cls.from_dict(doc, plan_id=plan_id, run_id=run_id, microbatches=microbatches,
                             layer_param_bytes=layer_param_bytes)

    @classmethod
    def from_dict(cls, doc: object, *, plan_id: int | None = None, run_id: int | None = None,
                  microbatches: int | None = None,
                  layer_param_bytes: Sequence[int] | None = None,
                  notes: Sequence[str] = ()) -> Self:
        """Read a decoded document (see :meth:`from_json`)."""
        f = Fields(doc)
        f.format_tag(FORMAT)
        gpus = f.integer("gpus", low=1)
        stages = read_stages(f, gpus)
        period = f.number("period", positive=True)
        pattern = read_pattern(f, stages, period)
        memory = f.numbers("memory_per_gpu")
        if len(memory) != gpus:
            raise ScheduleError(f"memory_per_gpu: want {gpus} values, one per GPU "
                                f"(got {len(memory)})")
        for i, m in enumerate(memory):
            if m < 0:
                raise ScheduleError(f"memory_per_gpu[{i}]: want bytes ≥ 0 (got {m!r})")
        # The planner says; a hand-written plan may leave it out.
        contiguous = f.boolean("contiguous", len({s.gpu for s in stages}) == len(stages))
        mb = microbatches if microbatches is not None else (
            f.integer("microbatches", low=1) if f.has("microbatches") else None)
        if mb is not None and (isinstance(mb, bool) or not isinstance(mb, int) or mb < 1):
            raise ScheduleError(f"microbatches: want an integer ≥ 1 (got {mb!r})")
        params = None
        if layer_param_bytes is not None:
            params = tuple(int(p) for p in layer_param_bytes)
            if len(params) != stages[-1].last:
                raise ScheduleError(f"the chain has {len(params)} layers but the stages "
                                    f"cover {stages[-1].last}")
        memory_bytes = f.number("memory_bytes", 0.0)
        if memory_bytes < 0:
            raise ScheduleError(f"memory_bytes: want bytes ≥ 0 (got {memory_bytes!r})")
        headroom = f.number("headroom", 0.0)
        if not 0 <= headroom < 1:
            raise ScheduleError(f"headroom: want a share of the memory in [0, 1) "
                                f"(got {headroom!r})")
        return cls(
            algo=f.string("algo", ""),
            gpus=gpus,
            memory_bytes=int(memory_bytes),
            bandwidth=f.number("bandwidth", positive=True) if f.has("bandwidth") else 0.0,
            weight_copies=f.integer("weight_copies", 2, low=1),
            activation_model=f.choice("activation_model", _ACTIVATION_MODELS, "saved"),
            period=period,
            stages=stages,
            pattern=pattern,
            memory_per_gpu=memory,
            contiguous=contiguous,
            microbatches=mb,
            temporaries=f.boolean("temporaries", False),
            headroom=headroom,
            checkpoint=f.boolean("checkpoint", False),
            sequential_time=f.number("sequential_time", 0.0),
            unconstrained_period=f.number("unconstrained_period", 0.0),
            plan_id=plan_id,
            run_id=run_id,
            layer_param_bytes=params,
            chosen=f.string("chosen", ""),
            predicted_period=f.number("predicted_period", 0.0),
            solve_ms=f.number("solve_ms", 0.0),
            fallback=f.string("fallback", ""),
            notes=tuple(str(n) for n in notes),
            raw=cast(dict[str, Any], doc),
        )

    def to_json(self) -> str:
        """The plan document (as read, or as the planner returned it)."""
        return json.dumps(self.raw)

    def plot(self, path: str | os.PathLike[str] | None = None, *, periods: int = 3) -> str:
        """Draw the plan as ``chainplan plot pipeline`` does: ``periods`` periods of its
        steady state, one lane per device and per link, each operation in its stage's
        colour with its mini-batch number, and each device's memory against the limit; a
        stored plan (``plan_id``) as ``--plan-id`` draws it, its lanes named after the device
        its profile ran on and each rank's measured peak beside the predicted one. The
        picture is made by the Go side (``internal/plot``).

        Args:
            path: when given, the SVG is also written there (a ``.svg`` file).

        Keyword Args:
            periods: the periods drawn (default: 3).

        Returns:
            The SVG document.

        Raises:
            PlanError: a bad ``periods`` or ``path``.
        """

        if isinstance(periods, bool) or not isinstance(periods, int) or periods < 1:
            raise PlanError(f"periods must be a positive integer (got {periods!r})")
        if self.plan_id is not None:
            svg = _bind.plot_stored_pipeline(self.plan_id, periods)
        else:
            svg = _bind.plot_pipeline(self.to_json(), periods)
        return write_svg(path, svg)

    def _repr_svg_(self) -> str | None:
        """The Gantt chart in a notebook; None (the text repr) when it cannot be drawn."""
        return svg_or_none(self.plot)

    def __str__(self) -> str:
        """One line: the planner, the period per micro-batch, each stage (layers ``first-
        last@gpu``, ``*`` when it recomputes) and, when recorded, how the period compares
        with one device's time and with the period of the best plan without a memory
        limit (times in seconds, as chainplan's profiles and chains have them)."""
        parts = [f"{s.first}-{s.last}@{s.gpu}{'*' if s.recompute else ''}" for s in self.stages]
        text = (f"{self.algo} on {self.gpus} GPUs, period {format_seconds(self.period)} per "
                f"micro-batch: {' '.join(parts)}")
        notes = []
        if self.speedup:
            notes.append(f"{self.speedup:.2f}x the throughput of one device, which takes "
                         f"{format_seconds(self.sequential_time)} per micro-batch")
        if self.memory_cost:
            notes.append(f"period {1 / self.memory_cost:.2f}x that of the best plan without a "
                         f"memory limit, {format_seconds(self.unconstrained_period)}")
        return text + (f" ({'; '.join(notes)})" if notes else "")
