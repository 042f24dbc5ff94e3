"""One plan for the ranks of a data-parallel group, made once (docs/distributed.md).

A :class:`~chainplan.Checkpointed` model under data parallelism (``fully_shard``, DDP,
``chainplan.parallelize``) profiles itself on every rank at its first training forward
with a kind of input. Planned apart, the ranks' plans could differ (their timings do),
which gathering FSDP units per stage cannot run, and a rank whose budget is too small
would raise alone while the others went on into a collective and waited for it until the
process group's timeout. So the ranks of the group agree, in two collectives of the
group, at that forward:

1. every rank sends its :class:`Offer` (``all_gather_object``): its chain (the profile it
   found or measured, as the ``chainplan.chain`` document the planner reads), its budget,
   its bandwidth and its planning options, or the error it met getting them;
2. if a rank failed, every rank raises: the failing rank its own error, the others an
   error of the same class that names the rank and says what it met;
3. otherwise rank 0 of the group plans once, on the group's chain
   (:func:`chainplan.rankchains.combine_chains`: per stage the most time and memory any
   rank measured) within the group's smallest budget and bandwidth, and sends the plan, or
   its error, to every rank (``broadcast_object_list``). An infeasible budget is then an
   :class:`~chainplan.errors.InfeasibleBudget` on every rank alike, naming the rank whose
   budget it is.

Every rank decides steps 2 and 3 from the same gathered offers, so no rank waits alone
in a collective the others left. The errors raised so carry ``raised_on_every_rank =
True``: ``chainplan.parallelize``'s failure board passes them on as they are, rather than
as the consequence of another rank's failure. Towers joined at the loss (a ``chainplan.multichain``
bundle, not one chain) are planned by rank 0 on its own profile, within the group's
smallest budget. The group holds the same model on every rank: the ranks of a pipeline
stage's data-parallel group, never the pipeline's other stages.

Without a group (one process, or no data parallelism found) nothing here runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch.distributed as dist

from chainplan import errors
from chainplan.errors import ChainplanError, InfeasibleBudget, PlanError
from chainplan.executors.fsdp import fsdp_group
from chainplan.rankchains import combine_chains
from chainplan.schedule import Plan

__all__ = ["Offer", "agree", "data_parallel_group"]


@dataclass(frozen=True)
class Offer:
    """What one rank brings to the agreement.

    Attributes:
        chain: its chain (a ``chainplan.chain`` document), None for towers.
        budget: its budget in bytes, None for ``"min"``.
        bandwidth: its host-device bandwidth (bytes/s), None when the algorithm reads none.
        options: what must be the same on every rank (the algorithm, its slots, ...).
        shape: the chain input's shape, for the messages.
    """

    chain: dict[str, Any] | None
    budget: int | None
    bandwidth: float | None
    options: tuple[Any, ...]
    shape: tuple[int, ...]


#: An error sent to the other ranks: its class name, message and min_budget_bytes.
_Failure = tuple[str, str, int | None]

#: Plan the source (rank 0's own, or the group's chain file) within the budget
#: (bytes or "min") and bandwidth.
Planner = Callable[[Any, "int | str", "float | None"], Plan]


def data_parallel_group(model: Any, given: Any, what: str) -> Any:
    """The group ``model``'s ranks agree their plans in: ``given``, else the group of the
    mesh ``fully_shard`` put on its units (:func:`chainplan.executors.fsdp.fsdp_group`).
    None (each rank plans alone): no process group, no such group, or a group of one.

    Raises:
        PlanError: this rank is not in the group given.
    """
    if not dist.is_available() or not dist.is_initialized():
        return None
    group = given if given is not None else fsdp_group(model)
    if group is None:
        return None
    if dist.get_rank(group) < 0:
        raise PlanError(f"{what}: group: this rank ({dist.get_rank()}) is not in the group "
                        "given")
    return group if dist.get_world_size(group) > 1 else None


def agree(group: Any, what: str, local: Callable[[], tuple[Offer, Any, Any]],
          plan: Planner, folder: Path) -> tuple[Plan, Any]:
    """The group's plan (module docstring), on every rank of ``group``.

    Args:
        group: the data-parallel process group.
        what: who plans, for the messages (``"Checkpointed(GPT)"``).
        local: this rank's part: its :class:`Offer`, its own source (planned by rank 0
            when there is no chain to combine) and what the caller wants back with the
            plan. Its exceptions are sent to the other ranks, then raised.
        plan: makes the plan, on rank 0.
        folder: where rank 0 writes the group's chain file.

    Returns:
        The plan and what ``local`` gave besides its offer.

    Raises:
        InfeasibleBudget: the group's smallest budget is below the plan's smallest, on
            every rank.
        PlanError: the ranks' chains or options differ; or another rank failed (its
            error's class when it is one of chainplan's), on every rank.
    """
    mine: Offer | _Failure
    own: BaseException | None = None
    source = extra = None
    try:
        offer, source, extra = local()
        mine = offer
    except Exception as e:  # sent to the others first: none of them may wait for this rank
        own, mine = e, _failure(e)
    ranks = dist.get_world_size(group)
    offers: list[Any] = [None] * ranks
    dist.all_gather_object(offers, mine, group=group)
    failed = [r for r, o in enumerate(offers) if not isinstance(o, Offer)]
    if failed:
        if own is not None:
            raise _everywhere(own)
        kind, message, least = offers[failed[0]]
        raise _everywhere(_rebuild(kind, f"{what}: rank {failed[0]} of the data-parallel "
                                   f"group (ranks {failed} failed) could not plan: {kind}: "
                                   f"{message}", least))
    got: list[Offer] = offers
    try:
        _same_options(got)
        plan_budget, binding = _budget(got)
        bandwidths = [o.bandwidth for o in got if o.bandwidth is not None]
        chains = [o.chain for o in got]
        if any(c is not None for c in chains) and any(c is None for c in chains):
            raise PlanError(f"{what}: ranks {[r for r, c in enumerate(chains) if c is None]} "
                            "hold towers joined at the loss, the others one chain: every "
                            "rank of the data-parallel group must run the same model")
        combined = combine_chains(chains) if chains[0] is not None else None  # type: ignore[arg-type]
    except PlanError as e:  # every rank finds it in the same offers
        raise _everywhere(e) from None
    bandwidth = min(bandwidths) if bandwidths else None
    box: list[Any] = [None]
    if dist.get_rank(group) == 0:
        try:
            src = source if combined is None else _write(combined, folder)
            p = plan(src, plan_budget, bandwidth)
            _fits(p, got)
            box = [p]
        except Exception as e:
            box = [_failure(e)]
    dist.broadcast_object_list(box, group=group, group_src=0)
    if not isinstance(box[0], Plan):
        kind, message, least = box[0]
        whose = f"rank {binding}'s budget, the group's smallest" if binding is not None \
            else "the plan's smallest budget, 'min' on some ranks"
        said = (f" (planned for the data-parallel group's {ranks} ranks, within {whose})"
                if kind == InfeasibleBudget.__name__ else
                f" (rank 0 of the data-parallel group's {ranks} ranks, planning for them)")
        raise _everywhere(_rebuild(kind, f"{message}{said}", least))
    return box[0], extra


def _everywhere(e: BaseException) -> BaseException:
    """``e``, marked as raised alike on every rank of the group (module docstring)."""
    try:
        e.raised_on_every_rank = True  # type: ignore[attr-defined]
    except AttributeError:  # an exception type with fixed slots: left unmarked
        pass
    return e


def _failure(e: BaseException) -> _Failure:
    least = getattr(e, "min_budget_bytes", None)
    return type(e).__name__, str(e), least if isinstance(least, int) else None


def _rebuild(kind: str, message: str, least: int | None) -> Exception:
    """An error of class ``kind`` when chainplan defines it (else a PlanError)."""
    cls = getattr(errors, kind, None)
    if cls is InfeasibleBudget:
        return InfeasibleBudget(message, min_budget_bytes=least or 0)
    if isinstance(cls, type) and issubclass(cls, ChainplanError):
        try:
            return cls(message)
        except TypeError:  # a class that needs more than its message
            pass
    return PlanError(message)


def _same_options(offers: list[Offer]) -> None:
    differ = [r for r, o in enumerate(offers) if o.options != offers[0].options]
    if differ:
        raise PlanError(f"the ranks of the data-parallel group plan with different options: "
                        f"{offers[0].options} on rank 0, {offers[differ[0]].options} on rank "
                        f"{differ[0]}: give every rank the same")


def _budget(offers: list[Offer]) -> tuple[int | str, int | None]:
    """The group's budget and the rank it is (None: ``"min"``): the smallest, where
    ``"min"`` (the plan's smallest) is below any feasible one."""
    if any(o.budget is None for o in offers):
        return "min", None
    binding = min(range(len(offers)), key=lambda r: (offers[r].budget, r))
    budget = offers[binding].budget
    assert budget is not None
    return budget, binding


def _fits(p: Plan, offers: list[Offer]) -> None:
    """A plan made at ``"min"`` for some ranks must fit the others' budgets in bytes."""
    small = [(r, o.budget) for r, o in enumerate(offers)
             if o.budget is not None and o.budget < p.budget_bytes]
    if small:
        r, b = small[0]
        raise InfeasibleBudget(f"rank {r}'s budget of {b} bytes is below the plan's smallest, "
                               f"{p.budget_bytes} bytes", min_budget_bytes=p.budget_bytes)


def _write(chain: dict[str, Any], folder: Path) -> Path:
    """The group's chain as a file (named by its content), for the planner to read."""
    text = json.dumps(chain, indent=1, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"group-{digest}.chain.json"
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    tmp.write_text(text)
    os.replace(tmp, path)  # concurrent writers of the same chain never leave half of one
    return path

