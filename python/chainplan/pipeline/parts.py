"""The parts of a pipeline plan, and reading them from its document.

:class:`PlanStage` (layers on a device), :class:`PatternOp` (one operation of the periodic
pattern) and :class:`Link` (a device pair and the boundaries crossing it) make up a
:class:`~chainplan.pipeline.plan.PipelinePlan`; :func:`read_stages` and :func:`read_pattern`
read them from a ``chainplan.pipeline/v1`` document with errors naming the field.

This module never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from chainplan.errors import ScheduleError
from chainplan.jsonfields import Fields
from chainplan.ops import Op, OpKind

__all__ = ["Link", "OpName", "PatternOp", "PlanStage", "Recompute", "read_pattern",
           "read_stages"]

#: ``F``/``B``: forward/backward of a stage on its device; ``CF``/``CB``: the transfer of
#: the stage's output to the next stage and of its gradient back, on the link between them.
OpName = Literal["F", "B", "CF", "CB"]
_OPS: tuple[str, ...] = ("F", "B", "CF", "CB")
# Pattern times are sums of measured floats: a start equal to the period, or a duration
# above it, by a few ulps is the planner's rounding, not a bad plan.
_REL_TOL = 1e-9


_STEPS: tuple[str, ...] = ("F_all", "F_ck", "F_none", "B")


@dataclass(frozen=True)
class Recompute:
    """How a stage that keeps only its input recomputes in its backward (docs/pipeline.md,
    "Checkpointing inside stages").

    Attributes:
        budget_bytes: the memory its backward may use above the stage input (bytes).
        sequence: the rotor sequence it runs when its output's gradient arrives, its
            layers numbered from 1 (``F_all``, ``F_ck``, ``F_none``, ``B``).
    """

    budget_bytes: int
    sequence: tuple[Op, ...]


@dataclass(frozen=True)
class PlanStage:
    """One stage of the partition: layers ``first..last`` of the chain on one device.

    Attributes:
        index: the stage's 0-based index (the ``stage`` of pattern operations).
        first: its first layer, 1-based as in the chain file.
        last: its last layer, inclusive.
        gpu: the 0-based device (rank) that runs it.
        recompute: None when the stage records its graph in its forward; else how its
            backward recomputes.
    """

    index: int
    first: int
    last: int
    gpu: int
    recompute: Recompute | None = None

    @property
    def layers(self) -> range:
        """The 1-based layer numbers of the stage."""
        return range(self.first, self.last + 1)


@dataclass(frozen=True)
class PatternOp:
    """One operation of the periodic pattern.

    Attributes:
        op: ``F``, ``B``, ``CF`` or ``CB``.
        stage: the 0-based index of the stage it belongs to.
        start: its start within the period, in [0, period) (seconds for profiles taken by
            chainplan).
        duration: how long it lasts (same unit).
        shift: micro-batch ``b`` runs it at ``start + (b + shift) * period``.
    """

    op: OpName
    stage: int
    start: float
    duration: float
    shift: int

    def __str__(self) -> str:
        return f"{self.op}{self.stage}@{self.start:g}+{self.shift}T"


@dataclass(frozen=True)
class Link:
    """The link between two devices and the stage boundaries that cross it.

    Attributes:
        gpus: the two devices, lower first.
        boundaries: the stages ``k`` whose output goes over this link to stage ``k+1``.
    """

    gpus: tuple[int, int]
    boundaries: tuple[int, ...]


def read_stages(f: Fields, gpus: int) -> tuple[PlanStage, ...]:
    """The ``stages`` of document ``f``: contiguous from layer 1, on GPUs below ``gpus``."""
    items = f.objects("stages")
    if not items:
        raise ScheduleError("stages: want at least one stage")
    out: list[PlanStage] = []
    for k, s in enumerate(items):
        first, last = s.integer("first", low=1), s.integer("last", low=1)
        want = out[-1].last + 1 if out else 1
        if first != want:
            raise ScheduleError(f"{s.path('first')}: want {want}, the layer after the "
                                f"previous stage (got {first})")
        if last < first:
            raise ScheduleError(f"{s.path('last')}: want a layer ≥ first ({first}) "
                                f"(got {last})")
        gpu = s.integer("gpu", low=0)
        if gpu >= gpus:
            raise ScheduleError(f"{s.path('gpu')}: want a GPU below gpus ({gpus}) (got {gpu})")
        out.append(PlanStage(k, first, last, gpu, _read_recompute(s, last - first + 1)))
    return tuple(out)


def _read_recompute(s: Fields, layers: int) -> Recompute | None:
    """A stage's ``recompute`` object, its sequence's stages within the stage's layers."""
    r = s.object("recompute")
    if r is None:
        return None
    budget = r.integer("budget_bytes", low=0)
    seq = []
    for o in r.objects("sequence"):
        kind = cast(OpKind, o.choice("op", _STEPS))
        k = o.integer("stage", low=1)
        if k > layers:
            raise ScheduleError(f"{o.path('stage')}: want a layer of the stage, 1..{layers} "
                                f"(got {k})")
        seq.append(Op(kind, k))
    if not seq:
        raise ScheduleError(f"{r.path('sequence')}: want the operations of the backward")
    return Recompute(budget, tuple(seq))


def read_pattern(f: Fields, stages: tuple[PlanStage, ...],
                 period: float) -> tuple[PatternOp, ...]:
    """The ``pattern`` of document ``f``: one F and one B per stage, a CF and a CB where the
    next stage is on another GPU, starts in [0, period)."""
    ops: list[PatternOp] = []
    seen: dict[tuple[str, int], str] = {}
    for o in f.objects("pattern"):
        name = cast(OpName, o.choice("op", _OPS))
        k = o.integer("stage", low=0)
        if k >= len(stages):
            raise ScheduleError(f"{o.path('stage')}: want a stage below {len(stages)} "
                                f"(got {k})")
        start, duration = o.number("start"), o.number("duration")
        if not 0 <= start < period * (1 + _REL_TOL):
            raise ScheduleError(f"{o.path('start')}: want a time in [0, period = {period:g}) "
                                f"(got {start!r})")
        if not 0 <= duration <= period * (1 + _REL_TOL):
            raise ScheduleError(f"{o.path('duration')}: want a time in [0, period = "
                                f"{period:g}] (got {duration!r})")
        if (name, k) in seen:
            raise ScheduleError(f"{o.where}: a second {name} of stage {k} "
                                f"(the first is {seen[name, k]})")
        seen[name, k] = o.where
        if name in ("CF", "CB"):
            if k == len(stages) - 1:
                raise ScheduleError(f"{o.where}: {name} of the last stage ({k}), which sends "
                                    f"nothing")
            if stages[k].gpu == stages[k + 1].gpu:
                raise ScheduleError(f"{o.where}: {name} of stage {k}, but stages {k} and "
                                    f"{k + 1} share GPU {stages[k].gpu}")
        ops.append(PatternOp(name, k, start, duration, o.integer("shift")))
    for s in stages:
        needed: list[OpName] = ["F", "B"]
        if s.index + 1 < len(stages) and stages[s.index + 1].gpu != s.gpu:
            needed += ["CF", "CB"]
        for name in needed:
            if (name, s.index) not in seen:
                raise ScheduleError(f"pattern: no {name} of stage {s.index} (every stage has "
                                    f"an F and a B, and a CF and a CB when the next stage is "
                                    f"on another GPU)")
    return tuple(ops)
