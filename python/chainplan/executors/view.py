"""The wrapped model is the user's model: a view of it whose training forward runs a plan.

``plan.wrap(model)`` and ``chainplan.Checkpointed(model, ...)`` return a **planned view**:
an object of a subclass of the model's own class, made for this wrap, that shares the
model's state (its ``__dict__``: the same children, parameters, buffers, hooks, training
flag and attributes). So the view has the model's attributes and children under their
names (a HuggingFace ``LlamaForCausalLM`` keeps its ``model`` child and its ``config``),
its ``state_dict()`` keys, its methods (``generate``, ``save_pretrained``), its
``forward`` signature and docstring, ``isinstance(view, type(model))``, and a state dict
saved from either loads into the other. The wrap adds no attribute to the model or to
the view: its own state is an attribute of the per-wrap class, under one reserved name
(:func:`planned` reads it), so nothing it adds can collide with a child's name.

Only ``forward`` differs: with gradients enabled it runs the plan and returns what the
model's forward returns (a tensor, a tuple, a ``ModelOutput`` with its ``loss``); under
``torch.no_grad()`` it is the model's own forward, so evaluation and ``generate`` are
untouched. Deep copies copy the model and wrap the copy the same way; pickling a view
(``torch.save(net)``) pickles the plain model: wrap it again after loading.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.fsdp import gathered_units
from chainplan.plandoc import PlanDocument

__all__ = ["Planned", "plain_model", "planned", "planned_view"]

#: The one name a view's class adds (a class attribute holding its :class:`Planned`).
_STATE = "_chainplan_planned"


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
    state = getattr(type(net), _STATE, None)
    return state if isinstance(state, Planned) else None


def plain_model(net: nn.Module) -> nn.Module:
    """``net`` itself, or for a planned view the plain model it shares its state with."""
    state = planned(net)
    return net if state is None else state.model


def planned_view(model: nn.Module, state: Planned) -> nn.Module:
    """A view of ``model`` whose training forward is ``state.run`` (module docstring).

    Raises:
        ScheduleError: ``model``'s class or instance already uses the reserved name.
    """
    cls = type(model)
    if _STATE in model.__dict__ or hasattr(cls, _STATE):
        raise ScheduleError(f"{cls.__name__} has an attribute named {_STATE}, the one name "
                            "chainplan reserves on a wrapped model's class")
    plain_forward = cls.forward

    def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():
            return plain_forward(self, *args, **kwargs)
        # Under fully_shard: executors/fsdp.py (and fsdpstage.py) gather the units.
        with gathered_units(self, state.model, state, (args, kwargs)):
            return state.run(args, kwargs)

    functools.update_wrapper(forward, plain_forward)

    def __deepcopy__(self: nn.Module, memo: dict[int, Any]) -> nn.Module:
        twin = copy.deepcopy(state.model, memo)
        return planned_view(twin, state.rewrap(twin))

    def __reduce_ex__(self: nn.Module, protocol: Any) -> Any:
        return state.model.__reduce_ex__(protocol)

    namespace = {"forward": forward, "__deepcopy__": __deepcopy__,
                 "__reduce_ex__": __reduce_ex__, _STATE: state,
                 "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__}
    meta: Any = type(cls)  # the model class's metaclass (type, or a library's own)
    view_cls = meta(cls.__name__, (cls,), namespace)
    view: nn.Module = object.__new__(view_cls)
    view.__dict__ = model.__dict__  # the same state, not a copy (module docstring)
    return view
