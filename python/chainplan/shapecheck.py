"""The input shape a plan was made for, and the warning when a plan runs on another.

A plan's memory figures hold for the input shape of the profile it was planned from: a plan
made at batch 4 and run at batch 32 needs about eight times the memory it predicts. The
planner cannot see the shape the plan later runs on, so the executors check it here, once
per plan and shape. This module never imports torch.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Protocol

from chainplan.plandoc import PlanDocument

__all__ = ["ShapeWarning", "warn_if_shape_differs"]


class ShapeWarning(UserWarning):
    """A plan runs on an input shape other than the one its profile was taken with, or a
    :class:`~chainplan.checkpointed.Checkpointed` planned anew for a new shape."""


class _Shaped(Protocol):
    @property
    def shape(self) -> Sequence[int]: ...


# The (plan, shape) pairs already warned about. Keyed by id(plan) and holding the plan itself,
# so that the id cannot be reused by another plan while the entry exists; plans are few and
# small, and this only grows on a mismatch, never in a loop that keeps one shape.
_warned: dict[tuple[int, tuple[int, ...]], PlanDocument] = {}
_lock = threading.Lock()


def warn_if_shape_differs(plan: PlanDocument, x: _Shaped, *, stacklevel: int = 5) -> bool:
    """Warn once per plan and shape when ``x`` is not shaped as the plan's profile input.

    Cheap enough to call on every forward: a plan without a known input shape, or an input
    of that shape, costs one comparison.

    Args:
        plan: the plan being run (its :attr:`~chainplan.schedule.Plan.input_shape` is None
            when the plan was made from a chain file).
        x: the chain input of this forward.

    Keyword Args:
        stacklevel: passed to :func:`warnings.warn` (default: 5, the training script's
            line when called from an executor's ``forward``: this function, ``forward``
            and the two frames of ``nn.Module.__call__`` lie between).

    Returns:
        True when the shapes differ (whether or not this call warned).
    """
    expected = plan.input_shape
    if expected is None or tuple(x.shape) == expected:
        return False
    shape = tuple(int(d) for d in x.shape)
    key = (id(plan), shape)
    with _lock:
        if key in _warned:
            return True
        _warned[key] = plan

    source = f"run {plan.run_id}" if plan.run_id is not None else "its profile"
    warnings.warn(
        f"a {plan.algo} plan made for input shape {list(expected)} ({source}, predicted peak "
        f"{_mib(plan.peak_bytes)}, budget {_mib(plan.budget_bytes)}) runs on input shape "
        f"{list(shape)}: its memory and time predictions do not hold for this shape; plan "
        f"for it (chainplan.Checkpointed plans once per input shape)",
        ShapeWarning, stacklevel=stacklevel)
    return True


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
