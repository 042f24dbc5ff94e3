"""Running a plan on the stages an ``nn.Sequential`` declares.

:class:`DeclaredPlan` is what ``plan.wrap(seq)`` runs for an ``nn.Sequential`` (the view it
returns is :mod:`chainplan.executors.view`'s, so the state-dict keys are the Sequential's
own): its training forward is a :class:`~chainplan.executors.CheckpointedChain`, or an
:class:`~chainplan.executors.OffloadedChain` for a plan with an ``offload`` section, on the
declared stages (nested Sequentials flattened).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.offload import OffloadedChain
from chainplan.executors.view import Planned
from chainplan.plandoc import PlanDocument
from chainplan.sequential import flatten_stages

__all__ = ["DeclaredPlan"]


class DeclaredPlan(Planned):
    """A plan run on a Sequential's declared stages (module docstring).

    Attributes:
        plan: the plan.

    Raises:
        ScheduleError: the plan is malformed or is for another number of stages.
    """

    def __init__(self, model: nn.Sequential, plan: PlanDocument) -> None:
        super().__init__(model)
        self.plan = plan
        stages = flatten_stages(model)
        runner_cls = OffloadedChain if plan.offload is not None else CheckpointedChain
        self._engine: CheckpointedChain | OffloadedChain = runner_cls(stages, plan)

    def executor(self, *args: Any, **kwargs: Any) -> CheckpointedChain | OffloadedChain:
        """The executor running the plan (the same for every call)."""
        return self._engine

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if len(args) != 1 or kwargs:
            raise ScheduleError(f"an nn.Sequential chain takes one tensor (got {len(args)} "
                                f"positional and {len(kwargs)} keyword arguments)")
        return self._engine(args[0])

    def rewrap(self, model: nn.Module) -> DeclaredPlan:
        assert isinstance(model, nn.Sequential)
        return DeclaredPlan(model, self.plan)
