"""What the spawned ranks of the data-parallel tests run (gloo on the CPU).

Every scenario trains the GPT of ``tests.graph.models`` (a ``ModuleList`` of blocks, a mask
argument, tied embeddings; dropout off) for three AdamW steps on its rank's half of a global
batch, and the same model in one process on the whole batch beside it, and reports the
differences and the measured and planned peaks to the parent, which asserts on them.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import os
import traceback
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

__all__ = ["run_session"]

STEPS, BATCH, SEQ = 3, 4, 16  # BATCH: the global batch, split over the ranks
# AdamW's eps: a gradient zero in exact arithmetic (the attention's key bias, which softmax
# ignores) is rounding noise of about 1e-9 that the default 1e-8 scales to a step of ±lr in
# any reduction order; 1e-6 keeps Adam's normalization for every real gradient.
EPS = 1e-6


def _gpt(blocks: int = 2) -> nn.Module:
    from tests.graph.models import GPT

    torch.manual_seed(1234)
    model = GPT(blocks=blocks, seq=SEQ)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


def _batches(world: int, rank: int) -> list[tuple[torch.Tensor, ...]]:
    """Each step's (global ids, global targets, local ids, local targets)."""
    gen = torch.Generator().manual_seed(7)
    out = []
    per = BATCH // world
    for _ in range(STEPS):
        idx = torch.randint(0, 256, (BATCH, SEQ), generator=gen)
        y = torch.randint(0, 256, (BATCH * SEQ,), generator=gen)
        out.append((idx, y, idx[rank * per:(rank + 1) * per],
                    y[rank * per * SEQ:(rank + 1) * per * SEQ]))
    return out


MASK = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()


def _full(p: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor

    return p.full_tensor() if isinstance(p, DTensor) else p


def _train(net: nn.Module, ref: nn.Module, *, probe_last: bool) -> dict[str, Any]:
    """Three AdamW steps of ``net`` (local batch) and ``ref`` (global batch); the last step
    of ``net`` measured (CPU: the rank's state before it, plus the peak allocated above)."""
    from chainplan.profiler.memory import MemoryProbe
    from chainplan.sharded import held_bytes

    world, rank = dist.get_world_size(), dist.get_rank()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2, eps=EPS)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, eps=EPS)
    loss_diff, measured = 0.0, 0
    gathers: list[int] = []  # FSDP2's all-gathers, per step
    ahead: list[int] = []  # of them, those started without waiting (a prefetch)
    behind: list[int] = []  # of those, the ones started in the backward
    for step, (idx, y, idx_l, y_l) in enumerate(_batches(world, rank)):
        opt.zero_grad(set_to_none=True)
        held = held_bytes(net.parameters()) + held_bytes(
            t for s in opt.state.values() for t in s.values())
        probe = MemoryProbe(device="cpu") if probe_last and step == STEPS - 1 else None
        with probe if probe is not None else _nothing(), _counting(gathers, ahead, behind):
            loss = F.cross_entropy(net(idx_l, mask=MASK), y_l)
            loss.backward()
            opt.step()
        if probe is not None:
            measured = held + probe.peak_bytes
        ref_opt.zero_grad(set_to_none=True)
        ref_loss = F.cross_entropy(ref(idx, mask=MASK), y)
        ref_loss.backward()
        ref_opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        loss_diff = max(loss_diff, abs(mean.item() / world - ref_loss.item()))
    ref_params = dict(ref.named_parameters())
    param_diff, worst = 0.0, ""
    for name, p in net.named_parameters():
        d = (_full(p.detach()) - ref_params[name].detach()).abs().max().item()
        if d > param_diff:
            param_diff, worst = d, name
    return {"loss_diff": loss_diff, "param_diff": param_diff, "worst": worst,
            "measured": measured, "gathers": gathers[-1], "ahead": ahead[-1],
            "ahead_backward": behind[-1]}


@contextlib.contextmanager
def _counting(counts: list[int], ahead: list[int] | None = None,
              behind: list[int] | None = None) -> Iterator[None]:
    """Count FSDP2's all-gathers (one per unit gathered) while the block runs, in
    ``ahead`` those started without waiting (``async_op``, its third argument), and in
    ``behind`` those of them started while autograd runs a backward."""
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group as group

    real = group.foreach_all_gather
    counts.append(0)
    ahead = ahead if ahead is not None else []
    behind = behind if behind is not None else []
    ahead.append(0)
    behind.append(0)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[-1] += 1
        early = bool(args[2] if len(args) > 2 else kwargs.get("async_op"))
        ahead[-1] += int(early)
        behind[-1] += int(early and torch._C._current_graph_task_id() != -1)
        return real(*args, **kwargs)

    group.foreach_all_gather = counted
    try:
        yield
    finally:
        group.foreach_all_gather = real


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _shard(net: nn.Module, mesh: Any = None) -> None:
    """torchtitan's order: fully_shard every block, then the wrapper (the root), on
    ``mesh`` (the default: every rank)."""
    from torch.distributed.fsdp import fully_shard

    for block in net.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(net, mesh=mesh)


def own_mesh_plans() -> dict[str, Any]:
    """Each rank shards its own model on a mesh of its own (the ``dp`` dimension of a
    (2, 1) mesh, as the stages of a pipeline do) and runs another plan per stage than the
    other rank: the plans are compared within the group sharding the model, so neither
    rank is refused (they were, compared over the whole world)."""
    from torch.distributed.device_mesh import init_device_mesh

    import chainplan
    from chainplan.sharded import RankPlan, rank_memory

    mesh = init_device_mesh("cpu", (dist.get_world_size(), 1), mesh_dim_names=("pp", "dp"))
    model = _gpt(blocks=4)
    rank = dist.get_rank()
    _, _, idx_l, y_l = _batches(dist.get_world_size(), rank)[0]
    prof = chainplan.profile(model, idx_l, loss_fn=F.cross_entropy, target=y_l,
                             repeats=1, warmup=0, progress=False, mask=MASK)
    plan = chainplan.plan(prof, budget="min", algo="store-all" if rank else None)
    mem = rank_memory(model, world=1, gathered="stage",
                      units=[f"blocks.{i}" for i in range(len(model.blocks))])
    net = RankPlan(plan, mem).wrap(model)
    _shard(net, mesh["dp"])
    F.cross_entropy(net(idx_l, mask=MASK), y_l).backward()
    forwards = [op.stage for op in plan.sequence if op.kind != "B"]
    return {"ran": True, "recomputes": len(forwards) > len(set(forwards))}


def _target(x: torch.Tensor) -> torch.Tensor:
    return x.flatten()  # one class per token: any ids below the vocabulary size


def checkpointed_fsdp(budget: str = "min", shard_first: bool = False) -> dict[str, Any]:
    """``Checkpointed(model)``, then ``fully_shard`` on each block and on the wrapper
    (torchtitan's order); ``shard_first``: the model sharded first, then Checkpointed."""
    import chainplan
    from chainplan.executors import planned
    from chainplan.sharded import rank_memory

    model = _gpt()
    ref = copy.deepcopy(model)
    if shard_first:
        _shard(model)
    net = chainplan.Checkpointed(model, budget=budget, loss_fn=F.cross_entropy, target=_target)
    if not shard_first:
        _shard(net)
    out = _train(net, ref, probe_last=True)
    mem = rank_memory(net, world=dist.get_world_size(), gathered="step")
    state = planned(net)
    assert state is not None
    plan = state.plans[0]  # type: ignore[attr-defined]
    out.update(planned=mem.fixed_bytes + plan.peak_bytes, fixed=mem.fixed_bytes,
               activations=plan.peak_bytes)
    return out


def rank_plan(world: int | None = None, shard: int | None = None) -> dict[str, Any]:
    """A plan per rank (chainplan.sharded.plan_rank) wrapped, then sharded with FSDP2;
    ``world``/``shard``: plan for another job than this one (refused)."""
    import chainplan
    from chainplan.sharded import plan_rank, rank_memory

    model = _gpt()
    ref = copy.deepcopy(model)
    n = dist.get_world_size()
    _, _, idx_l, y_l = _batches(n, dist.get_rank())[0]
    prof = chainplan.profile(model, idx_l, loss_fn=F.cross_entropy, target=y_l, repeats=1,
                             warmup=0, progress=False, mask=MASK)
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    mem = rank_memory(model, world=world or n, shard=shard, gathered="step",
                      units=[f"blocks.{i}" for i in range(len(model.blocks))])
    rp = plan_rank(prof, memory=mem, device_bytes=mem.fixed_bytes + (lo + hi) // 2)
    net = rp.wrap(model)
    _shard(net)
    out = _train(net, ref, probe_last=True)
    out.update(planned=rp.peak_bytes, fixed=mem.fixed_bytes, activations=rp.plan.peak_bytes)
    return out


def shared_plan(gathered: str = "stage", differ: bool = False) -> dict[str, Any]:
    """One plan (rank 0's, sent to every rank) of a 4-block GPT wrapped with
    ``RankPlan.wrap``, then sharded: ``gathered`` "stage" gathers each unit around the
    stages reading it, "step" every unit for the step; ``differ``: rank 1 runs another
    plan (refused by "stage" on every rank)."""
    import chainplan
    from chainplan.rankpeak import stage_units, step_peak
    from chainplan.sharded import RankPlan, rank_memory

    model = _gpt(blocks=4)
    ref = copy.deepcopy(model)
    n, rank = dist.get_world_size(), dist.get_rank()
    _, _, idx_l, y_l = _batches(n, rank)[0]
    mem = rank_memory(model, world=n, gathered=gathered,
                      units=[f"blocks.{i}" for i in range(len(model.blocks))])
    box: list[Any] = [None, None, 0]
    if rank == 0:
        prof = chainplan.profile(model, idx_l, loss_fn=F.cross_entropy, target=y_l,
                                 repeats=1, warmup=0, progress=False, mask=MASK)
        lo = chainplan.plan(prof, budget="min").budget_bytes
        hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
        box = [chainplan.plan(prof, budget=lo + (hi - lo) // 4),
               chainplan.plan(prof, budget="min", algo="store-all")]
        # The rank's peak over the step (chainplan.rankpeak), on the plan's own chain.
        box.append(step_peak(mem, box[0], prof, stage_units(prof, mem.units)))
    dist.broadcast_object_list(box, src=0)
    plan = box[1] if differ and rank == 1 else box[0]
    rp = RankPlan(plan, mem, box[2])
    net = rp.wrap(model)
    _shard(net)
    try:
        out = _train(net, ref, probe_last=True)
    except Exception as e:
        if not differ:
            raise
        flag = torch.ones(1)
        dist.all_reduce(flag)
        return {"refused": f"{type(e).__name__}: {e}", "alive": flag.item()}
    forwards = [op.stage for op in plan.sequence if op.kind != "B"]
    out.update(planned=rp.peak_bytes, fixed=mem.fixed_bytes, activations=plan.peak_bytes,
               summed=mem.fixed_bytes + plan.peak_bytes,
               recomputed=sorted({k for k in forwards if forwards.count(k) > 1}),
               block_bytes=mem.units["blocks.0"], algo=plan.algo,
               options=sorted({op.stage for op in plan.sequence if op.option}))
    return out


def plain_fsdp(blocks: int = 2) -> dict[str, Any]:
    """FSDP2 alone, the baseline of the reduction order's differences."""
    model = _gpt(blocks)
    ref = copy.deepcopy(model)
    _shard(model)
    return _train(model, ref, probe_last=False)


def plain_chain_fsdp() -> dict[str, Any]:
    """FSDP2 alone on the chain: its all-gathers without recomputation."""
    from torch.distributed.fsdp import fully_shard

    model = _chain()
    ref = copy.deepcopy(model)
    for stage in model:
        fully_shard(stage)
    fully_shard(model)
    return _train(_NoMask(model), _NoMask(ref), probe_last=False)


def ddp_checkpointed() -> dict[str, Any]:
    """``DDP(Checkpointed(model))``: the replicated case."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    import chainplan
    from chainplan.executors import planned
    from chainplan.sharded import held_bytes, rank_memory

    model = _gpt()
    ref = copy.deepcopy(model)
    view = chainplan.Checkpointed(model, budget="min", loss_fn=F.cross_entropy,
                                  target=_target)
    # The gradients are views of DDP's buckets, held through the steps (counted after).
    net = DDP(view, gradient_as_bucket_view=True)
    out = _train(_Forwarding(net), ref, probe_last=True)
    buckets = held_bytes(p.grad for p in model.parameters())
    mem = rank_memory(model, world=dist.get_world_size(), strategy="ddp", bucket_view=True)
    state = planned(view)
    assert state is not None
    plan = state.plans[0]  # type: ignore[attr-defined]
    out.update(measured=out["measured"] + buckets,
               planned=mem.fixed_bytes + plan.peak_bytes, fixed=mem.fixed_bytes,
               activations=plan.peak_bytes)
    return out


class _Forwarding(nn.Module):
    """DDP names its parameters ``module.*``: read them under the model's names."""

    def __init__(self, ddp: nn.Module) -> None:
        super().__init__()
        self.ddp = ddp

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.ddp(*args, **kwargs)

    def named_parameters(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self.ddp.module.named_parameters(*args, **kwargs)


def refused(world: int | None = None, shard: int | None = None) -> dict[str, Any]:
    """A plan made for another job: the error, and whether the ranks still agree after it
    (a collective that completes: none of them hangs in one the other never joins)."""
    try:
        rank_plan(world=world, shard=shard)
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    else:
        error = ""
    flag = torch.ones(1)
    dist.all_reduce(flag)
    return {"refused": error, "alive": flag.item()}


def _chain() -> nn.Sequential:
    from tests.models import gpt_like

    torch.manual_seed(1234)
    return gpt_like(vocab=256, width=32, blocks=2, seq=SEQ)[0]


def sequential_fsdp(budget: str = "min") -> dict[str, Any]:
    """A chain (nn.Sequential) planned per rank, each stage then sharded with fully_shard:
    FSDP2's own hooks gather a stage's parameters when the plan runs it, recomputations
    included (gathered per unit)."""
    from torch.distributed.fsdp import fully_shard

    import chainplan
    from chainplan.shardchain import sharded_chain
    from chainplan.sharded import plan_rank, rank_memory

    model = _chain()
    ref = copy.deepcopy(model)
    n = dist.get_world_size()
    _, _, idx_l, y_l = _batches(n, dist.get_rank())[0]
    prof = chainplan.profile(model, idx_l, loss_fn=F.cross_entropy, target=y_l, repeats=1,
                             warmup=0, progress=False)
    chain = sharded_chain(prof, Path(os.environ["CHAINPLAN_DB"]).with_name("fsdp.chain.json"),
                          shard=n, bandwidth=1e9)
    lo = chainplan.plan(chain, budget="min").budget_bytes
    units = [str(i) for i in range(len(model))]
    mem = rank_memory(model, world=n, units=units, gathered="chain")
    rp = plan_rank(chain, memory=mem, device_bytes=mem.fixed_bytes + lo)
    net = rp.wrap(model)
    for stage in net:
        fully_shard(stage)
    fully_shard(net)
    out = _train(_NoMask(net), _NoMask(ref), probe_last=True)
    out.update(planned=rp.peak_bytes, fixed=mem.fixed_bytes, activations=rp.plan.peak_bytes,
               recomputed=sorted(planned_recomputed(net)),
               sequence=[str(op) for op in rp.plan.sequence])
    return out


def planned_recomputed(net: nn.Module) -> set[int]:
    from chainplan.executors import planned

    state = planned(net)
    assert state is not None
    return set(state.executor(torch.zeros(1, SEQ, dtype=torch.long)).recomputed)


class _NoMask(nn.Module):
    """Calls a chain as the GPT's training loop does, without its mask."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, idx: torch.Tensor, mask: torch.Tensor) -> Any:
        return self.net(idx)

    def named_parameters(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self.net.named_parameters(*args, **kwargs)


def mixed_precision(grouped: bool = False) -> dict[str, Any]:
    """Checkpointed, then fully_shard with a MixedPrecisionPolicy (``grouped``: on the
    blocks as one group): refused at the first forward, on every rank, and the ranks still
    agree afterwards."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    import chainplan

    model = _gpt()
    net = chainplan.Checkpointed(model, budget="min", loss_fn=F.cross_entropy, target=_target)
    if grouped:  # both blocks one unit
        fully_shard(list(net.blocks))
        fully_shard(net)
    else:
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
        for block in net.blocks:
            fully_shard(block, mp_policy=policy)
        fully_shard(net, mp_policy=policy)
    _, _, idx_l, _ = _batches(dist.get_world_size(), dist.get_rank())[0]
    try:
        net(idx_l, mask=MASK)
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    else:
        error = ""
    flag = torch.ones(1)
    dist.all_reduce(flag)
    return {"refused": error, "alive": flag.item()}


KINDS: dict[str, Callable[..., dict[str, Any]]] = {
    "checkpointed_fsdp": checkpointed_fsdp, "rank_plan": rank_plan,
    "ddp_checkpointed": ddp_checkpointed,
    "plain_fsdp": plain_fsdp, "refused": refused, "own_mesh_plans": own_mesh_plans,
    "sequential_fsdp": sequential_fsdp,
    "plain_chain_fsdp": plain_chain_fsdp, "mixed_precision": mixed_precision,
    "shared_plan": shared_plan}


def run_session(rank: int, world: int, port: int, spec_path: str, results: str) -> None:
    """One spawned rank: run every scenario of the spec in turn (the kinds of its
    ``module``), each rank with its own database; outcomes (or errors) go to
    ``results/rank<r>.json``."""
    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    db = Path(results, f"rank{rank}")
    db.mkdir(exist_ok=True)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      CHAINPLAN_DB=str(db / "chainplan.db"))
    timeout = spec.get("timeout_s")
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            **({"timeout": timedelta(seconds=timeout)} if timeout else {}))
    kinds = importlib.import_module(spec.get("module") or __name__).KINDS
    got: dict[str, Any] = {}
    try:
        for sc in spec["scenarios"]:
            try:
                got[sc["name"]] = kinds[sc["kind"]](**sc.get("options", {}))
            except Exception as e:  # reported to the parent, which asserts on it
                got[sc["name"]] = {"error": f"{type(e).__name__}: {e}",
                                   "trace": traceback.format_exc()}
    finally:
        Path(results, f"rank{rank}.json").write_text(json.dumps(got))
    dist.destroy_process_group()
