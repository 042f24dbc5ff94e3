"""Running a plan's form options: a stage computed another way.

A *form option* of a stage (docs/formats.md, ``options``) is another computation of the
whole stage, the same function of the same inputs: the last stage of a language model with
its head unfused from its loss (:mod:`chainplan.graph.headform`). It keeps what its form
saves and recomputes nothing, so the executor runs it as the stage's own option 0 on the
stage in that form: :func:`with_forms` puts each chosen form in place of its stage and
turns the plan's ``F_all k/j`` of a form option into ``F_all k``. Everything downstream
(store-all stretches, recomputations, compiled regions) then sees a plain stage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from torch import nn

from chainplan.errors import ScheduleError
from chainplan.plandoc import PlanDocument

__all__ = ["with_forms"]


def with_forms(stages: Sequence[nn.Module],
               plan: PlanDocument) -> tuple[list[nn.Module], PlanDocument]:
    """The stages ``plan`` runs, each chosen form in place of its stage, and the plan with
    those options run as option 0 (module docstring).

    Raises:
        ScheduleError: a stage the plan runs in a form has no such form (not a stage cut
            from a captured graph, or not one with a fused head).
    """
    if not plan.forms:
        return list(stages), plan
    out = list(stages)
    for k, name in sorted(plan.forms.items()):
        if not 1 <= k <= len(out):
            raise ScheduleError(f"the plan runs stage {k} in its form {name!r}, but the "
                                f"chain has {len(out)} stages")
        make = getattr(out[k - 1], "form", None)
        if make is None:
            raise ScheduleError(f"the plan runs stage {k} in its form {name!r}, which only "
                                "a stage cut from a captured graph has")
        out[k - 1] = make(name)
    seq = tuple(dataclasses.replace(op, option=0) if op.option and op.stage in plan.forms
                else op for op in plan.sequence)
    choices = {k: keep for k, keep in plan.choices.items() if k not in plan.forms}
    return out, dataclasses.replace(plan, sequence=seq, choices=choices, forms={})
