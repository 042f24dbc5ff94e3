"""What a planned view runs, and how to find it from the view (:mod:`.view`).

A planned view's class holds its :class:`Planned` under one reserved name; :func:`planned`
reads it and :func:`plain_model` gives the plain model a view shares its state with. They
live apart from :mod:`.view`, which makes the views, so that the executors the view calls
(FSDP's gathering among them) can find a view's plain model without importing the view.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from chainplan.plandoc import PlanDocument

__all__ = ["STATE", "Planned", "plain_model", "planned"]

#: The one name a view's class adds (a class attribute holding its :class:`Planned`).
STATE = "_chainplan_planned"


class Planned:
    """What a planned view runs: subclasses hold the plan(s) and the executors.

    Attributes:
        model: the plain model the view shares its state with.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A training forward of the model with the plan (gradients enabled)."""
        raise NotImplementedError

    def rewrap(self, model: nn.Module) -> Planned:
        """The same wrap for another model (a deep copy of this one)."""
        raise NotImplementedError

    def plan_for(self, *args: Any, **kwargs: Any) -> PlanDocument | None:
        """The plan that runs calls like this one (None when none is made yet)."""
        plan: PlanDocument | None = getattr(self, "plan", None)
        return plan

    def ensure_plan_for(self, *args: Any, **kwargs: Any) -> PlanDocument | None:
        """The plan that runs calls like this one, made now when the wrap plans on first use
        (``Checkpointed``) and none is made yet: what :func:`chainplan.measure` measures."""
        return self.plan_for(*args, **kwargs)


def planned(net: nn.Module) -> Planned | None:
    """The planned wrap ``net`` runs (None for a module that is not a planned view).

    Its attributes say what the wrap holds: ``plan`` for ``plan.wrap(model)``, ``plans``
    and the planning options for ``Checkpointed``, ``model`` the plain model, and
    ``executor(*args, **kwargs)`` the executor that runs calls like these.
    """
    state = getattr(type(net), STATE, None)
    return state if isinstance(state, Planned) else None


def plain_model(net: nn.Module) -> nn.Module:
    """``net`` itself, or for a planned view the plain model it shares its state with."""
    state = planned(net)
    return net if state is None else state.model
