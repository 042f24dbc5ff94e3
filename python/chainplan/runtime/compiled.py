"""``torch.compile`` around an executor: the executor's Python runs eagerly, the stages compile.

``torch.compile(plan.wrap(model))`` compiles, frame by frame, what the wrapped module's
forward calls. The executor's own code (its loop over the plan, the saved-tensor hooks,
the RNG bookkeeping) must not be traced: it is plain Python over a few objects per stage,
and traced it would be re-specialized for every stage (a recompilation storm past
``torch._dynamo.config.cache_size_limit``). The stages must be compiled, and a stage
recomputed during the backward must run the *same* compiled code as its first forward, so
that autograd saves the same tensors in the same order (the executor fills the tensors
the first forward dropped by their order, :mod:`chainplan.runtime.saved`). Hence:

* the executor's entry points are skipped by Dynamo, without taking its frame evaluation
  away from what they call (:func:`entry`), and they read the callback Dynamo evaluates
  frames with (:func:`current`);
* the executor's body runs with frame evaluation off (:func:`eager`), and each stage call
  re-enables it with that callback (:func:`stage_call`), in the forward and in the
  recomputations that run during the backward, outside the compiled call;
* a stage cut from a captured graph skips its own ``forward`` (:func:`entry`), so that the
  frame compiled is its graph module's generated code, distinct per stage: each stage
  compiles once, whatever the number of stages.

This is the only module that uses Dynamo's private frame-evaluation API
(``torch._C._dynamo.eval_frame``); without it (a build without Dynamo) compiled wrapping is
simply eager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

__all__ = ["current", "eager", "entry", "stage_call"]

_F = TypeVar("_F", bound=Callable[..., Any])

_get_callback: Callable[[], Any] | None
_set_callback: Callable[[Any], Any] | None
try:
    from torch._C._dynamo.eval_frame import get_eval_frame_callback as _get_callback
    from torch._C._dynamo.eval_frame import set_eval_frame as _set_callback
except ImportError:  # pragma: no cover - a torch build without Dynamo
    _get_callback = _set_callback = None
_skip: Callable[[Any], Any] | None
try:
    from torch._dynamo.decorators import skip as _skip
except ImportError:  # pragma: no cover
    _skip = None


def entry(fn: _F) -> _F:
    """Dynamo skips ``fn``'s own frame but goes on compiling the frames it calls.

    The skip is marked on ``fn``'s code object once (``torch._dynamo.decorators.skip``), so
    Dynamo's frame evaluation passes over the frame in C at every call. ``disable(fn,
    recursive=False)`` does not: its wrapper makes Dynamo decide again at every call of
    ``fn`` (``convert_frame``, 0.5 ms on the 2-core test machine), 13 times per step of a
    10-stage plan, which made a compiled plan slower than the same plan eager.
    """
    if _skip is None:  # pragma: no cover - a torch build without Dynamo
        return fn
    marked: _F = _skip(fn)
    return marked


def current() -> Any:
    """The frame-evaluation callback in force (Dynamo's, under ``torch.compile``), or None."""
    if _get_callback is None:
        return None
    cb = _get_callback()
    return cb if cb else None


def eager(fn: _F) -> _F:
    """``fn`` and every frame it calls run without Dynamo (stage calls re-enable it)."""
    disable = getattr(torch._dynamo, "disable", None)
    if disable is None:  # pragma: no cover
        return fn
    wrapped: _F = disable(fn, recursive=True)
    return wrapped


def stage_call(callback: Any, stage: torch.nn.Module, *args: Any) -> Any:
    """``stage(*args)``, with Dynamo's ``callback`` evaluating its frames when one is given."""
    if callback is None or _set_callback is None:
        return stage(*args)
    prior = _set_callback(callback)
    try:
        return stage(*args)
    finally:
        _set_callback(prior)
