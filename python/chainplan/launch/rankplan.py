"""A candidate's ``memory``: one rank planned within its device memory (docs/distributed.md).

A candidate that gives ``memory`` (one rank's device bytes) has :func:`chainplan.parallelize`
plan the rank's activations within it less what the rank holds besides them: the fixed part
of :func:`chainplan.sharded.rank_memory` for the stack ``parallelize`` builds. Under FSDP2
(``fully_shard`` over ``dp`` on each block and on the ``Checkpointed`` wrapper) the plan
runs with every unit gathered for the step (``gathered="step"``, :mod:`chainplan.executors.fsdp`),
the blocks are the units and the parameters, gradients and optimizer state are sharded over
``dp``; under DDP they are whole, with DDP's buckets (``gradient_as_bucket_view`` off, as
``parallelize`` builds it); with ``dp`` = 1 there is neither.

Everything here depends on the model, the candidate and the optimizer's name only, so every
rank computes the same figures, and a fixed part that does not fit is refused before any
collective, alike on every rank.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from chainplan.errors import InfeasibleBudget, PlanError
from chainplan.executors import planned
from chainplan.launch.candidate import LaunchCandidate
from chainplan.sharded import RankMemory, optimizer_copies, rank_memory

__all__ = ["activation_budget", "candidate_memory", "planned_peak"]


def candidate_memory(model: nn.Module, cand: LaunchCandidate, data_parallel: str,
                     optimizer: str, units: list[str]) -> RankMemory:
    """What a rank of ``cand`` holds besides activations, as ``parallelize`` builds it;
    ``units``: the module paths ``fully_shard`` goes on below the root.

    Raises:
        PlanError: an unknown optimizer, or a candidate whose memory is not planned per
            rank yet (``pp`` > 1, ``tp`` > 1), naming why and what runs instead.
    """
    optimizer_copies(optimizer)  # refused by name before anything else
    if cand.pp > 1:
        raise PlanError("memory with pp > 1: a pipeline's ranks are planned by the pipeline "
                        "planner; give parallelize plan=chainplan.pipeline.pipeline_plan(..., "
                        "memory=...) instead of the candidate's memory")
    if cand.tp > 1:
        raise PlanError("memory with tp > 1: a tensor-parallel rank's peak is not planned "
                        "within its memory yet; give a model declared as an nn.Sequential a "
                        "checkpoint budget instead (its activations' budget), or run tp > 1 "
                        "without memory")
    if cand.dp == 1:
        return rank_memory(model, world=1, strategy="ddp", optimizer=optimizer,
                           bucket_view=True)  # no data parallelism: no buckets
    if data_parallel == "ddp":
        return rank_memory(model, world=cand.dp, strategy="ddp", optimizer=optimizer)
    return rank_memory(model, world=cand.dp, strategy="fsdp", optimizer=optimizer,
                       units=units, gathered="step", microbatches=cand.microbatches)


def activation_budget(memory: RankMemory, cand: LaunchCandidate) -> int:
    """The candidate's memory less ``memory``'s fixed part.

    Raises:
        InfeasibleBudget: the fixed part alone does not fit, with both figures and the terms.
        PlanError: a memory that is not a size.
    """
    assert cand.memory is not None
    try:
        return memory.activation_budget(cand.memory)
    except InfeasibleBudget as e:
        raise InfeasibleBudget(f"memory: the candidate's {cand.memory!r} per rank: {e}",
                               min_budget_bytes=e.min_budget_bytes) from e
    except PlanError as e:
        raise PlanError(f"memory: {e}") from e


def planned_peak(memory: RankMemory, view: Any) -> int | None:
    """The rank's planned peak: the fixed part and the largest activation peak of the plans
    ``view`` (a ``Checkpointed``) made so far; None before its first forward planned.

    The sum of maxima, not :func:`chainplan.rankpeak.step_peak`: a launched model is sharded
    at its blocks and root, or at the root alone (an ``nn.Sequential``), and with the root
    alone the replay leaves out the root's all-gather at the step's first forward (a rank
    measured 1.028x its step peak in CI, 861 060 B against 837 632)."""
    state = planned(view)
    plans = list(getattr(state, "plans", None) or [])
    if not plans:
        return None
    return memory.fixed_bytes + max(int(p.peak_bytes) for p in plans)
