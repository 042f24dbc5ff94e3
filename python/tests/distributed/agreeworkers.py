"""What the spawned ranks of the plan-agreement tests run (``test_agreed.py``; gloo, CPU).

Each rank profiles the GPT of ``tests.graph.models`` itself, as ``Checkpointed`` does under
``fully_shard``; the ranks' profiles are made to differ deterministically: every profile
a rank writes has its times replaced by fixed ones of the rank (:func:`_rank_times`), so
that each rank, planning alone, would choose another plan.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import importlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from tests.distributed.workers import MASK, _batches, _gpt, _shard, _target, _train

__all__ = ["KINDS"]


@contextlib.contextmanager
def _rank_times() -> Iterator[None]:
    """Every profile written meanwhile has fixed times: stage k (the loss last) of L+1
    costs k on rank 0 and L+2-k on rank 1 (1 ms a unit forward, 2 ms backward), so the
    stages cheapest to recompute are at one end of the chain on rank 0 and at the other
    on rank 1."""
    run = importlib.import_module("chainplan.profiler.run")
    real, rank = run.write_profile, dist.get_rank()

    def fixed(path: Any, rows: Any, meta: Any) -> Any:
        rows = list(rows)
        last = max(r.stage_index for r in rows)
        out = []
        for r in rows:
            w = r.stage_index if rank == 0 else last + 1 - r.stage_index
            out.append(dataclasses.replace(
                r, fwd_time_s=1e-3 * w, bwd_time_s=2e-3 * w,
                recompute_time_s=None if r.recompute_time_s is None else 1e-3 * w))
        return real(path, out, meta)

    run.write_profile = fixed
    try:
        yield
    finally:
        run.write_profile = real


def _digest(plan: Any) -> str:
    return hashlib.sha256(repr([str(op) for op in plan.sequence]).encode()).hexdigest()[:12]


def differing_profiles(fraction: float = 0.25) -> dict[str, Any]:
    """Checkpointed under fully_shard, its units gathered per stage, each rank's profile
    with the rank's fixed times: the ranks' own plans at the budget differ (reported), and
    the group's plan trains as FSDP2 alone."""
    import chainplan
    from chainplan.executors import planned
    from chainplan.executors.fsdp import set_gathering

    model = _gpt(blocks=4)
    ref = copy.deepcopy(model)
    _, _, idx_l, y_l = _batches(dist.get_world_size(), dist.get_rank())[0]
    with _rank_times():
        # This rank's own profile (stored: Checkpointed reuses it), and its plan alone.
        prof = chainplan.profile(model, idx_l, loss_fn=F.cross_entropy, target=y_l,
                                 repeats=1, warmup=0, progress=False, mask=MASK)
        lo = chainplan.plan(prof, budget="min", algo="rotor").budget_bytes
        hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
        budget = torch.tensor([lo + int((hi - lo) * fraction)])
        dist.all_reduce(budget, op=dist.ReduceOp.MIN)  # one budget: only the times differ
        alone = chainplan.plan(prof, budget=int(budget.item()), algo="rotor")
        net = chainplan.Checkpointed(model, budget=int(budget.item()), algo="rotor",
                                     loss_fn=F.cross_entropy, target=_target, repeats=1,
                                     warmup=0)
        _shard(net)
        set_gathering(net, "stage")
        out = _train(net, ref, probe_last=False)
    state = planned(net)
    assert state is not None
    plans = state.plans  # type: ignore[attr-defined]
    forwards = [op.stage for op in plans[0].sequence if op.kind != "B"]
    out.update(alone=_digest(alone), agreed=_digest(plans[0]), plans=len(plans),
               recomputed=sorted({k for k in forwards if forwards.count(k) > 1}))
    return out


def one_rank_short(small: int = 1000) -> dict[str, Any]:
    """Checkpointed under fully_shard, rank 1's budget ``small`` bytes (below any plan),
    rank 0's a GiB: the error on every rank, and whether the ranks still agree afterwards
    (a collective that completes: none of them waits in one the other left)."""
    import chainplan

    model = _gpt()
    ref = copy.deepcopy(model)
    budget = small if dist.get_rank() == 1 else "1GiB"
    net = chainplan.Checkpointed(model, budget=budget, loss_fn=F.cross_entropy,
                                 target=_target, repeats=1, warmup=0)
    _shard(net)
    least = None
    try:
        _train(net, ref, probe_last=False)
        error = ""
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
        least = getattr(e, "min_budget_bytes", None)
    flag = torch.ones(1)
    dist.all_reduce(flag)
    return {"refused": error, "least": least, "alive": flag.item()}


def one_rank_differs(case: str) -> dict[str, Any]:
    """Checkpointed under fully_shard, rank 1 unlike rank 0: its target function fails
    while it profiles (``case`` "fails"), or it asks for another algorithm ("options"):
    what each rank raised, and whether the ranks still agree afterwards."""
    import chainplan

    def broken(x: torch.Tensor) -> torch.Tensor:
        raise ZeroDivisionError("the target of rank 1")

    model = _gpt()
    one = dist.get_rank() == 1
    target = broken if one and case == "fails" else _target
    algo = "revolve" if one and case == "options" else "rotor"
    net = chainplan.Checkpointed(model, budget="min", algo=algo, loss_fn=F.cross_entropy,
                                 target=target, repeats=1, warmup=0,
                                 reuse=False)  # profiled here: the target is called
    _shard(net)
    _, _, idx_l, _ = _batches(dist.get_world_size(), dist.get_rank())[0]
    try:
        net(idx_l, mask=MASK)
        error = ""
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    flag = torch.ones(1)
    dist.all_reduce(flag)
    return {"refused": error, "alive": flag.item()}


def plain_fsdp(blocks: int = 2) -> dict[str, Any]:
    """FSDP2 alone, the baseline of the reduction order's differences."""
    from tests.distributed.workers import plain_fsdp as plain

    return plain(blocks)


KINDS = {"differing_profiles": differing_profiles, "one_rank_short": one_rank_short,
         "one_rank_differs": one_rank_differs, "plain_fsdp": plain_fsdp}
