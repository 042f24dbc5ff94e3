"""The checkpointing plan users hold: :class:`Plan`, read from the planner's JSON document
(``schedule.go``), run and drawn.

The fields and rules of the document are :class:`chainplan.plandoc.PlanDocument`, what the
executors read; the operations are :mod:`chainplan.ops` (both re-exported here). This
module never imports torch, so plans can be read, checked and tested without it;
:meth:`Plan.wrap` imports the executors (which need torch) only when called: an optional
heavy dependency, and the executors never import this module back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from chainplan import _bind
from chainplan.errors import PlanError, ScheduleError
from chainplan.jsonfields import Fields
from chainplan.offloading import Offload
from chainplan.ops import Op, OpKind
from chainplan.plandoc import Candidate, PlanDocument
from chainplan.svg import svg_or_none, write_svg
from chainplan.towerplan import Multichain
from chainplan.tradeoff import chain_json

if TYPE_CHECKING:
    from torch import nn

__all__ = ["Candidate", "Op", "Plan", "OpKind"]

_KINDS: tuple[str, ...] = ("F_all", "F_ck", "F_none", "B")
# A multichain plan also drops the gradient of a tower's input (chainplan.towerplan).
_TOWER_KINDS: tuple[str, ...] = (*_KINDS, "free_grad")


class Plan(PlanDocument):
    """A schedule returned by the planner: the document
    (:class:`~chainplan.plandoc.PlanDocument` has its attributes), decoded from the planner's
    JSON (:meth:`from_json`), run (:meth:`wrap`) and drawn (:meth:`plot`)."""

    @classmethod
    def from_json(cls, text: str | bytes | dict[str, Any], *, plan_id: int | None = None,
                  run_id: int | None = None,
                  input_shape: Sequence[int] | None = None,
                  chain_json: str | None = None, trusted: bool = False,
                  keep_logits: bool | None = None) -> Plan:
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
            forms={c.integer("stage", low=1): c.string("form")
                   for c in f.objects("options") if c.string("form", "")},
            multichain=None if towers is None else Multichain.from_fields(towers),
            keep_logits=keep_logits,
        )

    def wrap(self, model: nn.Module) -> nn.Module:
        """Return an ``nn.Module`` that trains ``model`` with this schedule.

        ``model`` must be the chain the plan was made for (same stages, in order). The
        returned :class:`~chainplan.executors.CheckpointedChain` shares its parameters; a
        plan with an :attr:`offload` section gets an
        :class:`~chainplan.executors.OffloadedChain`, a :attr:`multichain` plan a view of the
        model running a :class:`~chainplan.executors.towersplan.TowersPlan`. The same as
        :func:`chainplan.executors.wrap`, which this imports only when called (the
        executors need torch, this module does not).
        """
        from chainplan.executors import wrap  # torch: optional, heavy

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
        return svg_or_none(self.plot)
