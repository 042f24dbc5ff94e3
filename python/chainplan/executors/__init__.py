"""Executors: nn.Modules that run a planned schedule inside the training loop.

:func:`wrap` returns the model itself as a planned view (:mod:`~chainplan.executors.view`:
the model's class, attributes, children and state-dict keys; only the training forward
differs), whose forward runs the executor the plan needs: :class:`CheckpointedChain` runs a
rematerialization sequence (:mod:`~chainplan.executors.checkpoint`), :class:`OffloadedChain`
one with transfers to host memory (:mod:`~chainplan.executors.offload`). Both run their
operations through the shared :class:`~chainplan.executors.runner.Runner`. Which model
runs them: an ``nn.Sequential``'s declared stages (:mod:`~chainplan.executors.declared`),
any other model's stages cut from its graph (:mod:`~chainplan.executors.graphplan`), or
towers joined at the loss (:mod:`~chainplan.executors.towersplan`).
:func:`~chainplan.executors.view.planned` gives a view's plan and executors.
"""

from __future__ import annotations

from torch import nn

from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.declared import DeclaredPlan
from chainplan.executors.graphplan import GraphPlan
from chainplan.executors.offload import OffloadedChain
from chainplan.executors.towersplan import TowersPlan
from chainplan.executors.view import plain_model, planned, planned_view
from chainplan.plandoc import PlanDocument

__all__ = ["CheckpointedChain", "OffloadedChain", "planned", "wrap"]


def wrap(plan: PlanDocument, model: nn.Module) -> nn.Module:
    """Return an ``nn.Module`` that trains ``model`` with ``plan``'s schedule.

    Args:
        plan: a plan for ``model``'s chain (same stages, in order).
        model: the model (a planned view is unwrapped first). An ``nn.Sequential`` is the
            chain of its stages (see :func:`chainplan.stages.flatten_stages`); any other
            model is split from its graph at its first call, as ``chainplan.profile``
            split it (:mod:`chainplan.graph`).

    Returns:
        A planned view of ``model`` (:mod:`~chainplan.executors.view`): an instance of
        the model's class sharing its state, whose training forward runs the plan (an
        :class:`OffloadedChain` when the plan has an ``offload`` section, else a
        :class:`CheckpointedChain`) and returns what the model returns.
        ``planned(view).plan`` is the plan, ``planned(view).executor(*args)`` the
        executor of calls like these.

        For a plan of towers joined at the loss (``plan.multichain``), the view runs a
        :class:`~chainplan.executors.towersplan.TowersPlan`.

    Raises:
        ScheduleError: the plan is malformed or is for another number of stages.
    """
    model = plain_model(model)
    if plan.multichain is not None:
        return planned_view(model, TowersPlan(model, plan))
    if isinstance(model, nn.Sequential):
        return planned_view(model, DeclaredPlan(model, plan))
    return planned_view(model, GraphPlan(model, plan))
