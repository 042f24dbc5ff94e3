"""Plans and their operation sequences, mirroring the Go types (DESIGN.md, "Sequence").

This module never imports torch, so plans can be read, checked and tested without it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chainplan.errors import ScheduleError

__all__ = ["Op", "Plan", "OpKind"]

OpKind = Literal["F_all", "F_ck", "F_none", "B"]
_KINDS: frozenset[str] = frozenset({"F_all", "F_ck", "F_none", "B"})


@dataclass(frozen=True)
class Op:
    """One operation of a sequence.

    Attributes:
        kind: ``F_all`` (forward recording the graph), ``F_ck`` (forward without graph,
            input kept), ``F_none`` (forward without graph, input freed) or ``B``
            (backward).
        stage: 1-based stage index; the loss is stage L+1.
    """

    kind: OpKind
    stage: int

    def __str__(self) -> str:
        return f"{self.kind} {self.stage}"


@dataclass(frozen=True)
class Plan:
    """A schedule returned by the planner.

    Attributes:
        algo: the algorithm that produced it (``rotor``, ``sequential``, ...).
        makespan: predicted time of one training step, in the profile's time unit
            (seconds for profiles taken by chainplan).
        peak_bytes: predicted peak activation memory (bytes, chain input included).
        budget_bytes: the budget the plan was computed for (bytes).
        sequence: the operations, forward and backward, of one training step.
        slots: memory slots of the discretization (0 for baselines).
        solve_ms: planner time (milliseconds).
        segments: segment count of a ``sequential`` plan, else 0.
        plan_id: the id of the plan in the database, when it was recorded there.
        run_id: the id of the profile the plan was computed from, when stored.
        input_shape: the shape of the chain input the profile was taken with, when known
            (plans of a profile or a stored run; None for a chain file). The executors
            warn when the plan runs on another shape (:mod:`chainplan.shapecheck`).
    """

    algo: str
    makespan: float
    peak_bytes: int
    budget_bytes: int
    sequence: tuple[Op, ...]
    slots: int = 0
    solve_ms: float = 0.0
    segments: int = 0
    plan_id: int | None = None
    run_id: int | None = None
    input_shape: tuple[int, ...] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def num_stages(self) -> int:
        """L, the number of stages without the loss."""
        return max(op.stage for op in self.sequence) - 1

    @classmethod
    def from_json(cls, text: str | bytes, *, plan_id: int | None = None,
                  run_id: int | None = None,
                  input_shape: Sequence[int] | None = None) -> Plan:
        """Read a plan document as printed by ``chainplan solve``.

        The keyword arguments fill the attributes of the same names, which the document
        does not hold.

        Raises:
            ScheduleError: the document is not a valid plan (the message says why).
        """
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScheduleError(f"plan is not JSON ({e})") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("sequence"), list):
            raise ScheduleError("plan has no 'sequence' list")
        ops = []
        for i, item in enumerate(doc["sequence"]):
            kind, stage = item.get("op"), item.get("stage")
            if kind not in _KINDS:
                raise ScheduleError(f"sequence[{i}]: unknown op ({kind!r})")
            if not isinstance(stage, int) or stage < 1:
                raise ScheduleError(f"sequence[{i}]: bad stage ({stage!r})")
            ops.append(Op(kind, stage))
        if not ops:
            raise ScheduleError("plan has an empty sequence")
        return cls(
            algo=str(doc.get("algo", "")),
            makespan=float(doc.get("makespan", 0.0)),
            peak_bytes=int(doc.get("peak_bytes", 0)),
            budget_bytes=int(doc.get("budget_bytes", 0)),
            sequence=tuple(ops),
            slots=int(doc.get("slots", 0)),
            solve_ms=float(doc.get("solve_ms", 0.0)),
            segments=int(doc.get("segments", 0)),
            plan_id=plan_id,
            run_id=run_id,
            input_shape=tuple(int(d) for d in input_shape) if input_shape is not None else None,
            raw=doc,
        )

    def validate(self) -> None:
        """Check the structural rules every executable sequence follows.

        Every backward runs exactly once, in order L+1, L, ..., 1, and the forward of the
        loss comes right before its backward.

        Raises:
            ScheduleError: naming the first operation that breaks a rule.
        """
        n = self.num_stages + 1
        expected = n
        for i, op in enumerate(self.sequence):
            if op.kind == "B":
                if op.stage != expected:
                    raise ScheduleError(
                        f"op {i} ({op}): backward out of order (expected B {expected})")
                expected -= 1
        if expected != 0:
            raise ScheduleError(f"the sequence ends before B {expected}")
        loss = [i for i, op in enumerate(self.sequence) if op.stage == n]
        if len(loss) != 2 or self.sequence[loss[0]].kind != "F_all" or loss[1] != loss[0] + 1:
            raise ScheduleError(f"the loss (stage {n}) must appear as F_all {n} then B {n}")

    def wrap(self, model: Any) -> Any:
        """Return an ``nn.Module`` that trains ``model`` with this schedule.

        ``model`` must be the chain the plan was made for (same stages, in order). The
        returned :class:`~chainplan.executors.CheckpointedChain` shares its parameters; a
        plan with an ``offload`` section (pofo) gets an
        :class:`~chainplan.executors.OffloadedChain`.
        """
        from chainplan.executors.checkpoint import CheckpointedChain
        from chainplan.stages import flatten_stages

        if self.raw.get("offload") is not None:
            from chainplan.executors.offload import OffloadedChain

            return OffloadedChain(flatten_stages(model), self)
        return CheckpointedChain(flatten_stages(model), self)

    def __str__(self) -> str:
        return ", ".join(str(op) for op in self.sequence)
