"""The one module that touches torch.distributed.pipelining's private names.

Torch's public schedules put one stage per rank in a fixed order (``Schedule1F1B``,
``ScheduleGPipe``) or stage s on rank s mod P (``ScheduleInterleaved1F1B``). A chainplan
plan may put several non-adjacent stages on one rank, in the order of its periodic pattern.
Torch runs any such order through its private ``_PipelineScheduleRuntime``: given each
rank's compute actions (``_Action``), ``_prepare_schedule_with_comms`` infers the
stage-to-rank map from the lists, checks that every stage runs each micro-batch forward then
backward once, and inserts the sends and receives (none between adjacent stages of one
rank). Private API changes without notice, so every use of it is here, behind a check of
the torch versions it was tested with (:data:`TESTED_TORCH`).

The default store of the process group (also private) carries a failed rank's message to
the ranks that time out waiting for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

from chainplan.errors import PipelineError
from chainplan.pipeline.order import Action, Kind, Orders

__all__ = ["TESTED_TORCH", "check_torch_version", "failure_store", "interleaved_schedule",
           "plan_schedule"]

#: The torch releases (major, minor), first and last, that this module was tested with.
TESTED_TORCH = ((2, 15), (2, 15))
#: Set to 1 to run on a torch release outside :data:`TESTED_TORCH` anyway.
ANY_TORCH_ENV = "CHAINPLAN_PIPELINE_ANY_TORCH"


def check_torch_version(version: str | None = None) -> None:
    """Refuse a torch release outside :data:`TESTED_TORCH`, unless
    ``$CHAINPLAN_PIPELINE_ANY_TORCH`` is 1.

    Raises:
        PipelineError: naming the release and the tested range.
    """
    version = torch.__version__ if version is None else version
    m = re.match(r"(\d+)\.(\d+)", version)
    (lo_major, lo_minor), (hi_major, hi_minor) = TESTED_TORCH
    tested = f"{lo_major}.{lo_minor}" if TESTED_TORCH[0] == TESTED_TORCH[1] \
        else f"{lo_major}.{lo_minor} to {hi_major}.{hi_minor}"
    if m is not None and TESTED_TORCH[0] <= (int(m[1]), int(m[2])) <= TESTED_TORCH[1]:
        return
    if os.environ.get(ANY_TORCH_ENV) == "1":
        return
    raise PipelineError(
        f"chainplan's pipeline executor runs plans through torch.distributed.pipelining's "
        f"private _PipelineScheduleRuntime, tested with torch {tested} only (this is torch "
        f"{version}); install a tested release, or set {ANY_TORCH_ENV}=1 to try this one")


def _torch_orders(orders: Orders) -> dict[int, list[Any]]:
    from torch.distributed.pipelining.schedules import _Action, _ComputationType

    kinds = {"F": _ComputationType.FORWARD, "B": _ComputationType.FULL_BACKWARD}
    return {r: [_Action(a.stage, kinds[a.kind], a.microbatch) for a in acts]
            for r, acts in orders.items()}


def plan_schedule(stages: Sequence[Any], microbatches: int, loss_fn: Callable[..., Any],
                  orders: Orders, *, max_outstanding_sends: int | None = None) -> Any:
    """A schedule that runs this rank's ``stages`` (``PipelineStage`` s) in the plan's
    ``orders``: every rank's list, keyed by rank in the stages' process group (the
    lowering matches sends with receives across ranks).

    Torch's lowering waits for a backward send only at the end of the step, which keeps
    the input gradient of every micro-batch alive on the sending rank: memory the plan does
    not count, growing with the number of micro-batches. ``max_outstanding_sends`` moves
    waits earlier so that no rank has more sends pending (torch keeps the moves free of
    deadlock); when torch finds no such placement for the lists, the lists run without it.

    Raises:
        PipelineError: torch refused the lists (the message is torch's).
    """
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    def build(cap: int | None) -> Any:
        sched = _PipelineScheduleRuntime(  # type: ignore[no-untyped-call]
            list(stages), microbatches, loss_fn=loss_fn, scale_grads=False,
            max_outstanding_sends=cap)
        sched._prepare_schedule_with_comms(_torch_orders(orders))
        return sched

    try:
        try:
            return build(max_outstanding_sends)
        except ValueError as e:
            if max_outstanding_sends is None or "max_outstanding_sends" not in str(e):
                raise
            return build(None)
    except (AssertionError, ValueError, RuntimeError) as e:
        raise PipelineError(f"torch refused the plan's action lists: {e}") from e


def interleaved_schedule(stages: Sequence[Any], microbatches: int,
                         loss_fn: Callable[..., Any]) -> tuple[Any, Orders] | None:
    """Torch's ``ScheduleInterleaved1F1B`` for ``stages`` and its order on every rank, or
    None when torch refuses this number of micro-batches for it."""
    from torch.distributed.pipelining import ScheduleInterleaved1F1B

    try:
        sched = ScheduleInterleaved1F1B(list(stages), microbatches, loss_fn=loss_fn,
                                        scale_grads=False)
    except (AssertionError, ValueError, RuntimeError):
        return None
    kinds: dict[str, Kind] = {"F": "F", "B": "B"}
    orders: Orders = {}
    for rank, acts in sched.pipeline_order.items():
        out: list[Action] = []
        for a in acts:
            if a is None:
                continue
            kind = kinds.get(a.computation_type.value)
            if kind is None or a.microbatch_index is None:
                return None  # split backwards (I/W) are never a plan's order
            out.append(Action(a.stage_index, kind, a.microbatch_index))
        orders[rank] = tuple(out)
    return sched, orders


def failure_store() -> Any:
    """The default process group's key-value store, or None where torch has none to give.

    A rank that fails writes its message there; a rank that times out reads it, to name
    the rank that failed instead of only the one it waited for.
    """
    get = getattr(dist.distributed_c10d, "_get_default_store", None)
    if get is None:
        return None
    try:
        return get()
    except (RuntimeError, ValueError):
        return None
