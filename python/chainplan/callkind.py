"""A call's kind, as :class:`~chainplan.checkpointed.Checkpointed` plans per kind.

A plan is valid for every call of the same kind: the same chain input (shape, dtype,
device), autocast state, and other arguments (their shapes and dtypes; values for
non-tensors). :func:`call_key` is that kind, :func:`describe_key` how it is told to the
user. The checks :class:`~chainplan.checkpointed.Checkpointed` makes when built, before
anything is profiled (a loss that would fail only at the first forward, after profiling
every stage), live here too: they read the call the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from chainplan.api import LossFn
from chainplan.errors import ProfileError
from chainplan.graph.call import chain_input, training_call
from chainplan.graph.chain import args_key
from chainplan.reuse import loss_name

__all__ = ["Target", "call_chain_input", "call_key", "check_loss", "describe_key",
           "positional_inputs", "towers_may_be_stored"]

#: A sample target: an example batch, or a function making the target from the input.
Target = torch.Tensor | Callable[[torch.Tensor], torch.Tensor]


def towers_may_be_stored(model: nn.Module) -> bool:
    """Whether the profile of a call not found among the stored runs of a chain may still be
    a stored one: towers joined at the loss (several inputs) are found by their call
    signature (:mod:`chainplan.towers.profile`), not by :func:`stored_runs`."""
    return positional_inputs(model) > 1


def call_chain_input(model: nn.Module, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> torch.Tensor:
    """The chain input of a call (ProfileError without a tensor argument)."""
    if isinstance(model, nn.Sequential):
        x = args[0] if args else None
    else:
        x = chain_input(model, args, kwargs)
    if not isinstance(x, torch.Tensor):
        got = type(x).__name__ if args else "no argument"
        raise ProfileError(f"Checkpointed takes one tensor first, the chain input (got {got})")
    return x


def call_key(model: nn.Module, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a plan valid for a call: the chain input's shape, dtype and device, the
    autocast state, and the other arguments' shapes and dtypes (values, for non-tensors)."""
    x = call_chain_input(model, args, kwargs)
    kind = x.device.type
    cast = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else None
    key: tuple[Any, ...] = (x.shape, x.dtype, x.device, cast)
    if len(args) > 1 or kwargs:
        key += (args_key(*training_call(model, args, kwargs)),)
    return key


def describe_key(key: tuple[Any, ...]) -> str:
    """An input as :func:`call_key` sees it: ``shape [4, 3, 12, 12], float32 on cpu``."""
    shape, dtype, device, cast = key[:4]
    text = f"shape {list(shape)}, {str(dtype).removeprefix('torch.')} on {device}"
    return text + (f" under autocast {str(cast).removeprefix('torch.')}" if cast else "")


def check_loss(loss_fn: LossFn | None, target: Target | None,
               model: nn.Module | None = None) -> None:
    """Refuse a loss that will fail at the first forward, after profiling every stage.

    A model whose forward takes several inputs may be towers joined at the loss, whose loss
    takes one output per tower (``loss_fn(a, p, n)``): its arity is checked when the loss is
    profiled, not here."""
    if loss_fn is None:
        if target is not None:
            raise ProfileError("target= is the sample target of the loss: give loss_fn= too")
        return
    if not callable(loss_fn):
        raise ProfileError(f"loss_fn must be callable (got {type(loss_fn).__name__})")
    if target is not None:
        if not isinstance(target, torch.Tensor) and not callable(target):
            raise ProfileError("target must be an example target tensor or a function of the "
                               f"input (got {type(target).__name__})")
        return
    if model is not None and positional_inputs(model) > 1:
        return
    fn = loss_fn.forward if isinstance(loss_fn, nn.Module) else loss_fn
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # no signature to read (a builtin): it is called with the output alone
    try:
        sig.bind(None)
    except TypeError:
        raise ProfileError(
            f"loss_fn {loss_name(loss_fn)} takes a target, and Checkpointed profiles it before "
            "the first step: give a sample target, target=y (an example batch; its first "
            "dimension follows the input's) or target=lambda x: ... (made from the input)"
        ) from None


def positional_inputs(model: nn.Module) -> int:
    """How many positional arguments ``model``'s forward takes (a large number for
    ``*args``; 1 when its signature cannot be read)."""
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return 1 << 20
    return sum(1 for p in params if p.kind in kinds)
