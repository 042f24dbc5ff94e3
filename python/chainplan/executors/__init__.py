"""Executors: nn.Modules that run a planned schedule inside the training loop.

:func:`wrap` picks the executor a plan needs: :class:`CheckpointedChain` runs a
rematerialization sequence (:mod:`~chainplan.executors.checkpoint`), :class:`OffloadedChain`
one with transfers to host memory (:mod:`~chainplan.executors.offload`). Both run their
operations through the shared :class:`~chainplan.executors.runner.Runner`.
"""

from __future__ import annotations

from torch import nn

from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.offload import OffloadedChain
from chainplan.schedule import Plan
from chainplan.stages import flatten_stages

__all__ = ["CheckpointedChain", "OffloadedChain", "wrap"]


def wrap(plan: Plan, model: nn.Module) -> nn.Module:
    """Return an ``nn.Module`` that trains ``model`` with ``plan``'s schedule.

    Args:
        plan: a plan for ``model``'s chain (same stages, in order).
        model: the model; the returned module shares its parameters. An ``nn.Sequential``
            is the chain of its stages (see :func:`chainplan.stages.flatten_stages`); any
            other model is split from its graph at its first call, as ``chainplan.profile``
            split it (:mod:`chainplan.graph`).

    Returns:
        For an ``nn.Sequential``, an :class:`OffloadedChain` when the plan has an
        ``offload`` section (the offloading algorithms: ``pofo``, ``offload``, ``greedy``,
        ...), else a :class:`CheckpointedChain`; for any other model, a
        :class:`~chainplan.graph.executor.GraphChainExecutor` called like the model.

        For a plan of towers joined at the loss (``plan.multichain``), a
        :class:`~chainplan.towers.executor.TowersExecutor` called like the model.

    Raises:
        ScheduleError: the plan is malformed or is for another number of stages.
    """
    if plan.multichain is not None:
        from chainplan.towers.executor import TowersExecutor

        return TowersExecutor(model, plan)
    if not isinstance(model, nn.Sequential):
        from chainplan.graph.executor import GraphChainExecutor

        return GraphChainExecutor(model, plan)
    stages = flatten_stages(model)
    if plan.offload is not None:
        return OffloadedChain(stages, plan)
    return CheckpointedChain(stages, plan)
