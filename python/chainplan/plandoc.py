"""The checkpointing plan document: the fields of a planned schedule and the rules every
executable sequence follows (DESIGN.md, "Sequence").

:class:`PlanDocument` is what the executors read; :class:`chainplan.schedule.Plan`, what
:func:`chainplan.plan` returns and users hold, adds how a document is decoded, run and
drawn. The offloading part is typed in :mod:`chainplan.offloading`, the multichain part in
:mod:`chainplan.towerplan`. This module never imports torch, nor any module that runs or
draws a plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainplan.errors import ScheduleError
from chainplan.offloading import Offload
from chainplan.ops import Op
from chainplan.towerplan import Multichain

__all__ = ["Candidate", "PlanDocument"]


@dataclass(frozen=True)
class Candidate:
    """One schedule a planner computed and compared before choosing (:attr:`Plan.chosen`).

    Attributes:
        algo: the candidate (``pofo``, ``pofo-nearest``, ``rotor``, ``autocapper``, ...).
        feasible: false when it found no schedule within the budget.
        makespan: its makespan, replayed with the exact sizes in the plan's memory model.
        peak_bytes: its peak memory (bytes), replayed likewise.
        solve_ms: the time it took (milliseconds).
    """

    algo: str
    feasible: bool
    makespan: float = 0.0
    peak_bytes: int = 0
    solve_ms: float = 0.0


@dataclass(frozen=True)
class PlanDocument:
    """A schedule returned by the planner (:class:`chainplan.schedule.Plan` decodes, runs
    and draws it).

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
        offload: the offloading part of the plan (transfers to host memory and back), for
            the offloading algorithms (``pofo``, ``offload``, ``greedy``, ...); else None.
        chosen: for an algorithm that compares several schedules (``pofo``), the
            candidate this plan is; else empty.
        candidates: the outcome of every candidate compared, in tie-breaking order.
        raw: the document as read, for compatibility; the typed attributes are the API.
        chain_json: the ``chainplan.chain/v1`` (or v2) document of the chain the plan was
            made for, when :func:`chainplan.plan` knew it (chain and profile files); stored
            plans find theirs in the database. :meth:`plot` draws on it.
        choices: the operation-level options the sequence runs (``rotor-ops``): by stage,
            the positions of the nodes of the stage's captured graph that its first
            forward keeps (docs/formats-schedule.md); empty for other plans.
        forms: the stages whose chosen option is a form option, by stage: the form the
            executor runs the stage in (``"unfused_head"``: a language model's head
            unfused from its loss, :mod:`chainplan.graph.headform`); empty for other plans.
        multichain: for a plan of towers joined at the loss (the ``multichain``
            algorithms), its section: the operations then name their branch; else None.
        keep_logits: whether the profile the plan was made from kept a language model's
            logits beside its loss (``profile(..., keep_logits=True)``): the executor
            captures the model as it was profiled (:mod:`chainplan.graph.fuseloss`). None
            for a plan of a stored run: read from the run's profile file when the plan
            first runs a model captured from its graph (planning stays one crossing).
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
    offload: Offload | None = None
    chosen: str = ""
    candidates: tuple[Candidate, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    chain_json: str | None = field(default=None, compare=False, repr=False)
    choices: dict[int, tuple[int, ...]] = field(default_factory=dict)
    forms: dict[int, str] = field(default_factory=dict)
    multichain: Multichain | None = None
    keep_logits: bool | None = field(default=None, compare=False)

    @property
    def num_stages(self) -> int:
        """L, the number of stages without the loss (all towers' stages for a multichain
        plan)."""
        if self.multichain is not None:
            return sum(self.multichain.lengths(self.sequence))
        return max(op.stage for op in self.sequence) - 1

    def validate(self) -> None:
        """Check the structural rules every executable sequence follows.

        Every backward runs exactly once, in order L+1, L, ..., 1, the forward of the
        loss comes right before its backward, and an :attr:`offload` section fits the
        sequence (:meth:`~chainplan.offloading.Offload.check`).

        A multichain plan follows the rules of
        :meth:`chainplan.towerplan.Multichain.validate` instead.

        Raises:
            ScheduleError: naming the first operation that breaks a rule.
        """
        if self.multichain is not None:
            self.multichain.validate(self.sequence)
            return
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
        for i, op in enumerate(self.sequence):
            if op.option and (op.kind != "F_all" or op.stage not in self.choices):
                raise ScheduleError(f"op {i} ({op}): an option needs an F_all and the plan's "
                                    f"'options' entry for stage {op.stage}")
        if self.offload is not None:
            self.offload.check(ops=len(self.sequence), stages=self.num_stages)

    def validate_for(self, stages: int) -> None:
        """:meth:`validate`, and check the plan is for a chain of ``stages`` stages (what an
        executor checks before it runs the plan on a model's stages).

        Raises:
            ScheduleError: the plan is malformed or is for another number of stages.
        """
        self.validate()
        if self.num_stages != stages:
            raise ScheduleError(
                f"the plan is for {self.num_stages} stages, the model has {stages}")

    def __str__(self) -> str:
        return ", ".join(str(op) for op in self.sequence)
