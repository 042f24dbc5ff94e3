"""The input shape a plan was made for, and the warning when a plan runs on another.

A plan's memory figures hold for the input shape of the profile it was planned from: a plan
made at batch 4 and run at batch 32 needs about eight times the memory it predicts. The
planner cannot see the shape the plan later runs on, so the executors check it here, once
per plan and shape. This module never imports torch.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

from chainplan import _bind
from chainplan.plandoc import PlanDocument

__all__ = ["ShapeWarning", "warn_if_shape_differs", "run_input_shape", "profile_input_shape"]


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


def run_input_shape(run_id: int) -> tuple[int, ...] | None:
    """The input shape a stored run was profiled with, or None when it was not recorded
    (:class:`~chainplan.errors.NotFoundError` when there is no such run)."""
    dims = _bind.run(run_id)["input_shape"]
    return tuple(int(d) for d in dims) if dims else None


def profile_input_shape(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """The input shape recorded in a profile file's metadata, or None when absent."""
    import pyarrow as pa

    with pa.OSFile(os.fspath(path), "rb") as f:
        meta = pa.ipc.open_file(f).schema.metadata or {}
    raw = meta.get(b"input_shape")
    return _shape(raw.decode()) if raw is not None else None


def _shape(text: Any) -> tuple[int, ...] | None:
    """A shape from its JSON text; None for a missing or empty one (``chainplan.record``
    stored ``[]`` when it did not know the shape)."""
    if not text:
        return None
    dims = json.loads(text)
    return tuple(int(d) for d in dims) if dims else None
