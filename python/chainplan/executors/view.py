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
from chainplan.executors.planned import STATE, Planned, plain_model, planned

__all__ = ["Planned", "plain_model", "planned", "planned_view"]

def planned_view(model: nn.Module, state: Planned) -> nn.Module:
    """A view of ``model`` whose training forward is ``state.run`` (module docstring).

    Raises:
        ScheduleError: ``model``'s class or instance already uses the reserved name.
    """
    cls = type(model)
    if STATE in model.__dict__ or hasattr(cls, STATE):
        raise ScheduleError(f"{cls.__name__} has an attribute named {STATE}, the one name "
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
                 "__reduce_ex__": __reduce_ex__, STATE: state,
                 "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__}
    meta: Any = type(cls)  # the model class's metaclass (type, or a library's own)
    view_cls = meta(cls.__name__, (cls,), namespace)
    view: nn.Module = object.__new__(view_cls)
    view.__dict__ = model.__dict__  # the same state, not a copy (module docstring)
    return view
