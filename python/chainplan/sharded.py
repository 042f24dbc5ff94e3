"""A rank's plan under sharded or replicated data parallelism: its activations planned
within what the rank's memory leaves them (:func:`plan_rank`), and the plan run on the
rank (:class:`RankPlan`).

The memory model itself, what a rank holds besides activations, is
:mod:`chainplan.rankmemory` (``rank_memory``, ``RankMemory``), re-exported here, the
module users import; the rank's peak over the step is :mod:`chainplan.rankpeak`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from chainplan._bind import parse_bytes
from chainplan.api import plan
from chainplan.errors import InfeasibleBudget, PlanError
from chainplan.executors.fsdp import expect_world, set_gathering
from chainplan.executors.view import plain_model
from chainplan.rankmemory import (
    RankMemory,
    held_bytes,
    optimizer_copies,
    rank_memory,
    unit_sizes,
)
from chainplan.rankpeak import stage_units, step_peak

__all__ = ["RankMemory", "RankPlan", "held_bytes", "optimizer_copies", "plan_rank", "rank_memory",
           "unit_sizes"]


@dataclass(frozen=True)
class RankPlan:
    """A plan of one rank's activations, and the rank memory it was planned within.

    Attributes:
        plan: the activation plan (a :class:`~chainplan.schedule.Plan`).
        memory: what the rank holds besides activations.
        step_peak: the rank's peak over the step (:func:`chainplan.rankpeak.step_peak`:
            each operation's activations plus what the rank holds then), when known;
            :func:`plan_rank` sets it.
    """

    plan: Any
    memory: RankMemory
    step_peak: int | None = None

    @property
    def peak_bytes(self) -> int:
        """The rank's planned peak: :attr:`step_peak` when known, else the fixed part and
        the plan's activation peak (every term at its largest at once)."""
        if self.step_peak is not None:
            return self.step_peak
        return self.memory.fixed_bytes + int(self.plan.peak_bytes)

    def wrap(self, model: nn.Module) -> nn.Module:
        """``plan.wrap(model)``, refused unless the plan's data-parallel ranks divide this
        job's (the other ranks of a job go to its pipeline or tensor-parallel dimensions);
        checked here, before any collective, and exactly at each forward against the mesh
        of the units ``fully_shard`` makes (docs/distributed.md).

        Raises:
            PlanError: the plan's world size does not divide the job's.
        """
        import torch.distributed as dist

        actual = dist.get_world_size() if dist.is_initialized() else 1
        if actual % self.memory.world:
            raise PlanError(f"this plan was made for {self.memory.world} data-parallel ranks, "
                            f"and this job has {actual}, which they do not divide: plan again "
                            "with rank_memory(..., world=) the job's data-parallel size")
        view: nn.Module = self.plan.wrap(model)
        expect_world(plain_model(view), self.memory.world, self.memory.shard)
        set_gathering(view, "stage" if self.memory.gathered_mode == "stage" else "step")
        return view


def plan_rank(source: Any, *, memory: RankMemory, device_bytes: int | str,
              **options: Any) -> RankPlan:
    """Plan a rank's activations so that its peak over the step fits ``device_bytes``.

    ``source`` and ``options`` (``algo``, ``slots``, ``bandwidth``) are as for
    :func:`chainplan.plan`. The rank's peak is :func:`chainplan.rankpeak.step_peak` (what
    the rank holds besides activations at each operation, not at its largest throughout),
    so the activation budget can exceed ``device_bytes`` less ``fixed_bytes``: starting
    from ``device_bytes`` less the sharded state and the root's parameters, the budget is
    lowered by each plan's excess until a plan's step peak fits.

    Raises:
        InfeasibleBudget: the fixed part does not fit, or no plan fits what is left.
    """
    total = parse_bytes(device_bytes) if isinstance(device_bytes, str) else int(device_bytes)
    reads = stage_units(source, memory.units)
    least = memory.params_bytes + memory.optimizer_bytes + memory.units.get("", 0)
    if least >= total:
        memory.activation_budget(total)  # the fixed part alone does not fit: its message
    budget, smallest = total - least, None
    for _ in range(_SEARCH_STEPS):
        try:
            p = plan(source, budget=budget, **options)
        except InfeasibleBudget:  # below the smallest plan: that one is the last to try
            p = plan(source, budget="min", **options)
            budget = 0
        peak = step_peak(memory, p, source, reads)
        if peak <= total:
            return RankPlan(p, memory, peak)
        smallest = peak if smallest is None else min(smallest, peak)
        if budget <= 0:
            break
        budget = max(1, min(budget - (peak - total), int(p.peak_bytes) - 1))
    raise InfeasibleBudget(
        f"no plan of this rank fits {total} bytes over the step (the smallest tried peaks "
        f"at {smallest} bytes; besides activations, at most {memory.terms()})",
        min_budget_bytes=smallest or 0)


#: Plans :func:`plan_rank` tries, each lowering the budget by the last one's excess.
_SEARCH_STEPS = 12
