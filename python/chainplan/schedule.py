"""Plans and their operation sequences, mirroring the Go types (DESIGN.md, "Sequence").

A :class:`Plan` is read from the planner's JSON document (``schedule.go``); the offloading
part of a plan is typed in :mod:`chainplan.offloading`. This module never imports torch, so
plans can be read, checked and tested without it; :meth:`Plan.wrap` imports the executors
only when called.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from chainplan.errors import ScheduleError
from chainplan.jsonfields import Fields
from chainplan.offloading import Offload
from chainplan.towerplan import Multichain

if TYPE_CHECKING:
    from torch import nn

__all__ = ["Candidate", "Op", "Plan", "OpKind"]

OpKind = Literal["F_all", "F_ck", "F_none", "B", "free_grad"]
_KINDS: tuple[str, ...] = ("F_all", "F_ck", "F_none", "B")
# A multichain plan also drops the gradient of a tower's input (chainplan.towerplan).
_TOWER_KINDS: tuple[str, ...] = (*_KINDS, "free_grad")


@dataclass(frozen=True)
class Op:
    """One operation of a sequence.

    Attributes:
        kind: ``F_all`` (forward recording the graph), ``F_ck`` (forward without graph,
            input kept), ``F_none`` (forward without graph, input freed) or ``B``
            (backward); in a multichain plan also ``free_grad`` (drop the gradient of a
            tower's input).
        stage: 1-based stage index; the loss is stage L+1. In a multichain plan, the stage
            within the branch, and 0 for the joint loss and ``free_grad``.
        option: on an ``F_all``, the stage's operation-level option (1, 2, ...: its first
            forward keeps what the option keeps and the rest is recomputed right before
            its backward; :attr:`Plan.choices` says what); 0, the default, keeps everything.
            Multichain plans run none.
        branch: in a multichain plan, the tower (1..K; 0 for the joint loss); else 0.
    """

    kind: OpKind
    stage: int
    option: int = 0
    branch: int = 0

    def __str__(self) -> str:
        if self.kind == "free_grad":
            return f"free_grad {self.branch}"
        if self.stage == 0:
            return f"{self.kind} loss"
        if self.branch:
            return f"{self.kind} {self.branch}.{self.stage}"
        if self.option:
            return f"{self.kind} {self.stage}/{self.option}"
        return f"{self.kind} {self.stage}"


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
        multichain: for a plan of towers joined at the loss (the ``multichain``
            algorithms), its section: the operations then name their branch; else None.
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
    multichain: Multichain | None = None

    @property
    def num_stages(self) -> int:
        """L, the number of stages without the loss (all towers' stages for a multichain
        plan)."""
        if self.multichain is not None:
            return sum(self.multichain.lengths(self.sequence))
        return max(op.stage for op in self.sequence) - 1

    @classmethod
    def from_json(cls, text: str | bytes | dict[str, Any], *, plan_id: int | None = None,
                  run_id: int | None = None,
                  input_shape: Sequence[int] | None = None,
                  chain_json: str | None = None, trusted: bool = False) -> Plan:
        """Read a plan document as printed by ``chainplan solve``.

        The keyword arguments fill the attributes of the same names, which the document
        does not hold.

        Args:
            text: the document, as JSON text or already decoded.
            trusted: the document is the one the Go planner of this installation has just
                returned through :mod:`chainplan._bind` (:func:`chainplan.plan`), already
                decoded: Go replayed it with its simulator and checked its transfers'
                positions, so its fields are read into the typed views (their types, as
                always) without the range checks of :meth:`Offload.check` again. Leave it
                false for anything read from a file or written by hand.

        Raises:
            ScheduleError: the document is not a valid plan (the message says why).
        """
        if isinstance(text, dict):
            doc = text
        else:
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as e:
                raise ScheduleError(f"plan is not JSON ({e})") from e
        f = Fields(doc)
        if not f.has("sequence"):
            raise ScheduleError("plan has no 'sequence' list")
        towers = f.object("multichain")
        if towers is None:
            ops = tuple(Op(cast(OpKind, o.choice("op", _KINDS)), o.integer("stage", low=1),
                           o.integer("option", 0, low=0))
                        for o in f.objects("sequence"))
        else:
            ops = tuple(Op(cast(OpKind, o.choice("op", _TOWER_KINDS)), o.integer("stage", low=0),
                           branch=o.integer("branch", low=0)) for o in f.objects("sequence"))
        if not ops:
            raise ScheduleError("plan has an empty sequence")
        num_stages = max(op.stage for op in ops) - 1
        section = f.object("offload")
        return cls(
            algo=f.string("algo", ""),
            makespan=f.number("makespan", 0.0),
            peak_bytes=f.integer("peak_bytes", 0),
            budget_bytes=f.integer("budget_bytes", 0),
            sequence=ops,
            slots=f.integer("slots", 0),
            solve_ms=f.number("solve_ms", 0.0),
            segments=f.integer("segments", 0),
            plan_id=plan_id,
            run_id=run_id,
            input_shape=tuple(int(d) for d in input_shape) if input_shape is not None else None,
            offload=None if section is None else Offload.from_dict(
                section.obj, ops=len(ops), stages=num_stages, trusted=trusted),
            chosen=f.string("chosen", ""),
            candidates=tuple(
                Candidate(algo=c.string("algo"), feasible=c.boolean("feasible", False),
                          makespan=c.number("makespan", 0.0),
                          peak_bytes=c.integer("peak_bytes", 0),
                          solve_ms=c.number("solve_ms", 0.0))
                for c in f.objects("candidates")),
            raw=doc,
            chain_json=chain_json,
            choices={c.integer("stage", low=1): tuple(c.integers("keep"))
                     for c in f.objects("options")},
            multichain=None if towers is None else Multichain.from_fields(towers),
        )

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

    def wrap(self, model: nn.Module) -> nn.Module:
        """Return an ``nn.Module`` that trains ``model`` with this schedule.

        ``model`` must be the chain the plan was made for (same stages, in order). The
        returned :class:`~chainplan.executors.CheckpointedChain` shares its parameters; a
        plan with an :attr:`offload` section gets an
        :class:`~chainplan.executors.OffloadedChain`, a :attr:`multichain` plan a view of the
        model running a :class:`~chainplan.towers.executor.TowersPlan`. The same as
        :func:`chainplan.executors.wrap`, which this imports only when called (the
        executors need torch, this module does not).
        """
        from chainplan.executors import wrap

        return wrap(self, model)

    def plot(self, path: str | os.PathLike[str] | None = None, *, chain: object = None) -> str:
        """Draw the plan's memory timeline, as ``chainplan plot timeline`` does.

        The simulated memory over time, the budget line and the peak, the operations on a
        lane below; for a stored plan that ran, the peak its executions measured. The
        picture is made by the Go side (``internal/plot``).

        Args:
            path: when given, the SVG is also written there (a ``.svg`` file).

        Keyword Args:
            chain: the chain the plan schedules, anything :func:`chainplan.plan` takes (a
                Profile, a run id, a chain or profile file). Default: the chain the plan
                was made from (:attr:`chain_json`), else the stored plan's run.

        Returns:
            The SVG document.

        Raises:
            PlanError: no chain is known (pass ``chain=``), or a bad ``path``.
            ScheduleError: the plan is not valid on the chain.
        """
        from chainplan import _bind
        from chainplan.errors import PlanError
        from chainplan.tradeoff import chain_json, write_svg

        doc = json.dumps(self.raw)
        if chain is not None:
            svg = _bind.plot_timeline(chain_json(chain, "Plan.plot"), doc)
        elif self.chain_json is not None:
            svg = _bind.plot_timeline(self.chain_json, doc)
        elif self.plan_id is not None:
            svg = _bind.plot_stored_timeline(self.plan_id)
        else:
            raise PlanError("Plan.plot(): the plan does not know its chain; pass chain= "
                            "(a Profile, a run id or a chain file)")
        return write_svg(path, svg)

    def _repr_svg_(self) -> str | None:
        """The memory timeline in a notebook; None (the text repr) when it cannot be drawn."""
        from chainplan.tradeoff import svg_or_none

        return svg_or_none(self.plot)

    def __str__(self) -> str:
        return ", ".join(str(op) for op in self.sequence)
