"""What each spawned gloo rank of the FSDP2 benchmark runs (one session: one process group).

A session builds its variants (bench/fsdp/variants.py) on copies of one model, checks each
against the plain FSDP2 run (the loss and every gradient of one step from the same
parameters), measures each one's per-rank peak (its sharded parameters and optimizer state,
plus ``MemoryProbe``'s peak over a training step, as tests/distributed/workers.py does),
then times them in alternating rounds: round r runs one step of every variant in turn, and
a variant's time is the median over the rounds, so a busy machine slows all of them alike.

chainplan's variants are planned on the rank's own profile: at activation budgets spread
from its smallest plan to store-all, and at each alternative's measured per-rank peak: at
the largest activation budget whose plan's peak over the step fits that memory
(``chainplan.sharded.plan_rank``'s search, ``rank_memory(..., gathered="step")``: the step
keeps every unit gathered, docs/distributed.md; with ``--gathered stage``,
``gathered="stage"``, every rank running rank 0's plan) and, a second time, at that memory
less the fixed part measured on the sweep's plans (what a user who measured one run would
plan with). A plan's planned per-rank memory is its peak over the step
(``chainplan.rankpeak.step_peak``: each operation's activations plus what the rank holds
then, never above rank_memory's fixed part plus the plan's activation peak).
"""

from __future__ import annotations

import datetime
import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from variants import build  # noqa: E402  (bench/fsdp is on sys.path)

__all__ = ["run_session"]


def _model(size: dict[str, int], chain: bool) -> nn.Module:
    """The tests' GPT (a ModuleList of blocks, a mask argument), or with ``chain`` the
    tests' ``nn.Sequential`` GPT (embedding, blocks, head: stages the plan calls)."""
    from tests.graph.models import GPT
    from tests.models import gpt_like

    torch.manual_seed(1234)
    if chain:
        model: nn.Module = gpt_like(vocab=size["vocab"], width=size["width"],
                                    blocks=size["blocks"], seq=size["seq"])[0]
    else:
        model = GPT(vocab=size["vocab"], width=size["width"], heads=size["heads"],
                    blocks=size["blocks"], seq=size["seq"])
    for m in model.modules():
        if isinstance(m, nn.Dropout):  # so every variant computes the same loss
            m.p = 0.0
    return model


class _Variant:
    def __init__(self, name: str, family: str, net: nn.Module, **info: Any) -> None:
        self.name, self.family, self.net, self.info = name, family, net, info
        self.opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
        self.times: list[float] = []
        self.peak = 0

    def step(self, idx: torch.Tensor, y: torch.Tensor, kwargs: dict[str, Any]) -> None:
        F.cross_entropy(self.net(idx, **kwargs), y).backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def _grads(net: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter's whole gradient (a collective: every rank, the same order), by the
    plain model's name."""
    from torch.distributed.tensor import DTensor

    out = {}
    for name, p in net.named_parameters():
        g = p.grad
        if isinstance(g, DTensor):
            g = g.full_tensor()
        out[name.replace("_checkpoint_wrapped_module.", "")] = g
    return out


Batch = tuple[torch.Tensor, torch.Tensor, dict[str, Any]]  # ids, targets, call's kwargs


def _check(v: _Variant, ref: dict[str, Any] | None, batch: Batch) -> dict[str, Any]:
    """One step's loss (averaged over the ranks) and gradients, without the optimizer."""
    idx, y, kwargs = batch
    loss = F.cross_entropy(v.net(idx, **kwargs), y)
    loss.backward()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    got = {"loss": mean.item() / dist.get_world_size(), "grads": _grads(v.net)}
    v.opt.zero_grad(set_to_none=True)
    if ref is None:
        return got
    diff = max(((got["grads"][k] - g).abs().max().item() for k, g in ref["grads"].items()),
               default=0.0)
    scale = max((g.abs().max().item() for g in ref["grads"].values()), default=1.0)
    v.info.update(loss_diff=abs(got["loss"] - ref["loss"]), grad_diff=diff, grad_scale=scale)
    return got


def _measure(v: _Variant, batch: Batch) -> None:
    from chainplan.profiler.memory import MemoryProbe
    from chainplan.sharded import held_bytes

    held = held_bytes(v.net.parameters()) + held_bytes(
        t for s in v.opt.state.values() for t in s.values())
    with MemoryProbe(device="cpu") as probe:
        v.step(*batch)
    v.peak = held + probe.peak_bytes


class _Planner:
    """chainplan on the rank's own profile: plans at activation budgets, each wrapped and
    sharded once (identical plans run once, under every label that asked for them)."""

    def __init__(self, model: nn.Module, batch: Batch, spec_gathered: str = "step") -> None:
        import chainplan
        from chainplan.rankpeak import stage_units
        from chainplan.shardchain import sharded_chain
        from chainplan.sharded import rank_memory

        idx, y, kwargs = batch
        self.model = model
        prof = chainplan.profile(model, idx, loss_fn=F.cross_entropy, target=y, repeats=3,
                                 warmup=1, progress=False, spread_warning=None, **kwargs)
        world = dist.get_world_size()
        if isinstance(model, nn.Sequential):  # FSDP2 gathers a stage whenever it runs
            # FSDP2's hooks then gather a unit whenever a plan runs it, recomputations
            # included: the ranks must run the same plan, so all plan on rank 0's chain.
            path = Path(os.environ["CHAINPLAN_DB"]).with_name("fsdp.chain.json")
            sharded_chain(prof, path, shard=world)
            text = [path.read_text() if dist.get_rank() == 0 else None]
            dist.broadcast_object_list(text, src=0)
            path.write_text(str(text[0]))
            self.source: Any = path
            units, gathered = [str(i) for i in range(len(model))], "chain"
        else:  # every unit gathered for the step, or per stage (executors/fsdpstage.py)
            self.source = prof
            units = [f"blocks.{i}" for i in range(len(model.blocks))]  # type: ignore[arg-type]
            gathered = spec_gathered
        self.gathered = gathered
        self.memory = rank_memory(model, world=world, gathered=gathered, units=units)
        self.fixed = self.memory.fixed_bytes
        # Each operation's activations plus what the rank holds then (chainplan.rankpeak).
        self.reads = stage_units(prof, self.memory.units)
        lohi = [chainplan.plan(self.source, budget="min").budget_bytes,
                chainplan.plan(self.source, budget="min", algo="store-all").budget_bytes]
        if gathered == "stage":  # the collectives follow the plan: every rank runs rank 0's
            dist.broadcast_object_list(lohi, src=0)
        self.lo, self.hi = lohi
        self.least = self.peak(chainplan.plan(self.source, budget=self.lo))
        self.seen: dict[str, _Variant] = {}

    def peak(self, p: Any) -> int:
        """The rank's planned peak of plan ``p`` over the step."""
        from chainplan.rankpeak import step_peak

        return step_peak(self.memory, p, self.source, self.reads)

    def fit(self, memory: int) -> int:
        """The activation budget whose plan's step peak fits ``memory`` (plan_rank's
        search); 0 when none does."""
        import chainplan
        from chainplan.sharded import plan_rank

        try:
            return int(plan_rank(self.source, memory=self.memory,
                                 device_bytes=memory).plan.budget_bytes)
        except chainplan.InfeasibleBudget:
            return 0

    def add(self, label: str, budget: int, target: int, fixed: int) -> _Variant | None:
        """The plan at activation ``budget`` (``target``: the per-rank memory asked, 0 for
        a sweep plan; ``fixed``: the fixed part it was asked with); None when it is one
        already built (``label`` joins its labels)."""
        import chainplan

        try:
            p = chainplan.plan(self.source, budget=max(budget, 1))
        except chainplan.InfeasibleBudget:
            p = None
        planned = self.peak(p) if p is not None else 0
        if self.gathered == "stage":
            box = [p, planned]
            dist.broadcast_object_list(box, src=0)
            p, planned = box
        # Each rank plans on its own profile: what runs is decided together, or one rank
        # would wait in a collective of a variant the other never built.
        key = str(p) + repr(sorted(p.choices.items())) if p is not None else ""
        dups = list(self.seen).index(key) if key in self.seen else -1
        every: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(every, (p is None, dups))
        if any(off for off, _ in every):
            return _Variant(label, "chainplan", nn.Linear(1, 1), infeasible=True,
                            target=target, min_bytes=self.least if fixed == self.fixed
                            else self.lo + fixed)
        if dups >= 0 and all(d == dups for _, d in every):
            self.seen[key].info["labels"].append(label)
            return None
        assert p is not None
        v = _Variant(label, "chainplan", build("chainplan", self.model, plan=p,
                                               gathered=self.gathered), labels=[],
                     target=target, planned=planned, fixed=self.fixed,
                     activations=p.peak_bytes, summed=self.fixed + p.peak_bytes)
        self.seen[key if key not in self.seen else f"{key}#{len(self.seen)}"] = v
        return v


def _chainplan(model: nn.Module, spec: dict[str, Any], batch: Batch,
               ref: dict[str, Any], targets: dict[str, int]) -> list[_Variant]:
    """chainplan at ``spec["sweep"]`` activation budgets spread from its smallest plan to
    store-all, then at each per-rank memory of ``targets``: once less rank_memory's fixed
    part (what a user plans with), once less the fixed part measured on the sweep's plans
    (the largest, over plans and ranks, of measured peak less planned activations)."""
    planner = _Planner(model, batch, spec.get("gathered", "step"))
    lo, hi, k = planner.lo, planner.hi, spec["sweep"]
    out: list[_Variant] = []

    def run(label: str, budget: int, target: int, fixed: int) -> None:
        v = planner.add(label, budget, target, fixed)
        if v is None:
            return
        out.append(v)
        if not v.info.get("infeasible"):
            _check(v, ref, batch)
            v.step(*batch)
            _measure(v, batch)

    for j in range(k + 2):
        run(f"chainplan sweep {j}", lo + (hi - lo) * j // (k + 1), 0, planner.fixed)
    measured = _max(max(v.peak - v.info["activations"] for v in out
                        if not v.info.get("infeasible")))
    for name, peak in targets.items():  # the budget whose plan's step peak fits
        run(f"chainplan @ {name}", planner.fit(peak) or -1, peak, planner.fixed)
    for name, peak in targets.items():
        run(f"chainplan @ {name}, fixed part measured", peak - measured, peak, measured)
    for v in out:
        v.info["measured_fixed"] = measured
    return out


def _session(spec: dict[str, Any]) -> dict[str, Any]:
    rank = dist.get_rank()
    size = spec["size"]
    model = _model(size, spec.get("chain", False))
    gen = torch.Generator().manual_seed(7 + rank)  # each rank its own part of the batch
    b, s = size["batch"], size["seq"]
    kwargs = {} if spec.get("chain") else {"mask": torch.ones(s, s, dtype=torch.bool).tril()}
    batch = (torch.randint(0, size["vocab"], (b, s), generator=gen),
             torch.randint(0, size["vocab"], (b * s,), generator=gen), kwargs)
    t0 = time.perf_counter()
    variants = [_Variant("FSDP2", "plain", build("plain", model))]
    if spec["kind"] == "compile":
        import torch._functorch.config as fconfig

        fconfig.activation_memory_budget = spec["compile_budget"]
        variants.append(_Variant(f"FSDP2 + compile, budget {spec['compile_budget']}",
                                 "compile", build("compile", model)))
    else:
        variants += [_Variant("FSDP2, no reshard", "no-reshard", build("no-reshard", model)),
                     _Variant("FSDP2 + per-block AC", "per-block", build("per-block", model)),
                     _Variant("FSDP2 + per-op SAC", "sac", build("sac", model)),
                     _Variant("FSDP2 + per-op SAC (torchtitan, every 2nd mm)", "sac",
                              build("sac-torchtitan", model))]
    ref = _check(variants[0], None, batch)
    for v in variants[1:]:
        _check(v, ref, batch)
    for v in variants:
        v.step(*batch)  # warm: allocations, lazy compilation (timed for compile)
    setup_s = time.perf_counter() - t0
    for v in variants:
        _measure(v, batch)
    if spec["kind"] == "main":
        targets = {v.name: _max(v.peak) for v in variants}
        targets.update(spec.get("targets", {}))
        variants += _chainplan(model, spec, batch, ref, targets)
    runnable = [v for v in variants if not v.info.get("infeasible")]
    for r in range(spec["rounds"]):
        for i in range(len(runnable)):  # each round starts one later: no fixed neighbours
            v = runnable[(i + r) % len(runnable)]
            dist.barrier()
            t = time.perf_counter()
            v.step(*batch)
            v.times.append(time.perf_counter() - t)
    return {"setup_s": setup_s, "variants": [
        {"name": v.name, "family": v.family, "peak": v.peak, "times": v.times, **v.info}
        for v in variants]}


def _max(x: int) -> int:
    t = torch.tensor([x], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def run_session(rank: int, world: int, port: int, spec_path: str, out_dir: str) -> None:
    """One spawned rank: run the session ``spec_path`` describes, write what it measured to
    ``out_dir/rank<r>.json`` (or the error)."""
    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    db = Path(out_dir, f"rank{rank}")
    db.mkdir(exist_ok=True)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      CHAINPLAN_DB=str(db / "chainplan.db"))
    # A rank stuck in a collective the other never joins fails after this, not 30 min.
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(minutes=10))
    try:
        got = _session(spec)
    except Exception as e:
        got = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(got))
    dist.destroy_process_group()
