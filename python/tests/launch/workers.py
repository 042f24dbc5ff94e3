"""What the spawned ranks of the launch tests run (gloo on the CPU); each rank writes what
it saw to ``rank<r>.json`` for the parent to assert on."""

from __future__ import annotations

import json
import os
import signal
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from tests.launch import models

STEPS = 3


def run_rank(rank: int, world: int, port: int, spec_path: str, out_dir: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    spec = json.loads(Path(spec_path).read_text())
    os.environ["CHAINPLAN_DB"] = str(Path(out_dir) / f"db{rank}.sqlite")
    torch.set_num_threads(1)
    # A collective that hangs shows as a timeout within the test's time, not a stuck suite.
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=spec.get("timeout_s", 60)))
    result: dict[str, Any] = {}
    try:
        result = globals()[spec["kind"]](rank, world, **spec.get("options", {}))
    except Exception as e:
        result = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    if spec.get("barrier", True):
        dist.barrier()
    dist.destroy_process_group()


def train(rank: int, world: int, *, kind: str, candidate: dict[str, Any],
          data_parallel: str = "fsdp", plan: dict[str, Any] | None = None,
          example: bool = False, measure: bool = False) -> dict[str, Any]:
    """Three AdamW steps of ``candidate``; each rank reports the losses and the full value
    of every parameter it holds. With a pipeline ``plan`` (its document and its layers'
    parameter bytes), each rank's peak over one more step (SGD, as the plan counts
    weights and gradients only) beside the plan's prediction for it, too. With
    ``measure``, what ``chainplan.launch.measure`` measures after the three steps (AdamW
    going on): each rank's peak and planned peak."""
    import chainplan
    from chainplan.pipeline.plan import PipelinePlan

    model = models.build(kind)
    pipe = PipelinePlan.from_dict(plan["doc"], layer_param_bytes=plan["params"]) \
        if plan is not None else None
    # One micro-batch's call, for a model the pipeline cuts from its graph.
    call = models.data(kind, candidate.get("microbatch", 1), 1)[0][0] if example else None
    pipe_on = candidate.get("mesh", {}).get("pp", 1) > 1
    par = chainplan.parallelize(model, candidate=candidate, loss_fn=models.loss_of(kind, pipe_on),
                                data_parallel=data_parallel, plan=pipe, timeout_s=60,
                                example=call)
    c = par.candidate
    replica = par.groups.dp.rank() if par.groups.dp is not None else 0
    opt = torch.optim.AdamW(list(par.parameters()), lr=1e-2)
    losses = []
    for x, y in models.data(kind, par.batch * c.dp, STEPS):
        mine = slice(replica * par.batch, (replica + 1) * par.batch)
        loss = par.step(x[mine], target=y[mine])
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    held = {id(p) for p in par.parameters()}
    params, local = {}, {}
    for name, p in model.named_parameters():
        if hasattr(p, "to_local"):
            local[name] = list(p.to_local().shape)
        full = p.full_tensor() if hasattr(p, "full_tensor") else p  # a collective: all ranks
        if id(p) in held:
            params[name] = full.detach().flatten().tolist()
    from chainplan.executors import planned
    from chainplan.launch.stageplan import CheckpointedPart

    stages = list(par.runner.stage_modules.values()) if par.runner is not None else []
    parts = [m.net for s in stages for m in s.modules() if isinstance(m, CheckpointedPart)]
    if par.module is not None:
        inner = getattr(par.module, "module", par.module)  # DDP's
        parts += [inner] if planned(inner) is not None else []
    plans = sum(len(planned(m).plans) for m in parts)
    # The first plan's operations, the stages it recomputes (forwarded more than once) and
    # the ranks that agreed on it (the size of its Checkpointed's group; None: planned alone).
    first = planned(parts[0]) if plans else None
    ops = list(first.plans[0].sequence) if first is not None else []
    sequence = [f"{op.kind}{op.stage}" for op in ops]
    forwards = [op.stage for op in ops if op.kind != "B"]
    recomputed = sorted({k for k in forwards if forwards.count(k) > 1})
    group = getattr(first, "group", None)
    agreed = dist.get_world_size(group) if group is not None else None
    from chainplan.profiler.measuring import param_bytes
    from chainplan.sharded import held_bytes

    # The parameter bytes the profiler counts in a stage, beside those the rank holds.
    counted = {"profiled": param_bytes(model), "held": held_bytes(model.parameters())}
    measured: dict[str, Any] = {}
    if measure:
        from chainplan.launch.measure import measure as measure_run

        x, y = models.data(kind, par.batch * c.dp, 1)[0]
        mine = slice(replica * par.batch, (replica + 1) * par.batch)
        got = measure_run(par, lambda: par.step(x[mine], target=y[mine]), opt, steps=1)
        measured = {"peaks": list(got.peak_bytes), "planned": list(got.planned_bytes),
                    "over_plan": got.over_plan(), "fixed": par.memory.fixed_bytes
                    if par.memory is not None else None}
    if pipe is not None:
        x, y = models.data(kind, par.batch, 1)[0]
        sgd = torch.optim.SGD(list(par.parameters()), lr=0.0)
        ex = par.runner.measure(x, target=y, steps=1, store=False, optimizer=sgd)
        measured = {"peaks": [r.peak_bytes for r in ex.ranks],
                    "predicted": [r.predicted_bytes for r in ex.ranks],
                    "recomputing": [s.index for s in pipe.stages if s.recompute is not None]}
    heads = [b.attn.n_heads for b in model.blocks] if kind == "gpt" else []  # type: ignore
    return {"losses": losses, "params": params, "local": local, "heads": heads,
            "checkpointed_plans": plans, "recomputed": recomputed, "sequence": sequence,
            "agreed_by": agreed, "param_bytes": counted, **measured}


def refuse(rank: int, world: int, *, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Refusals, on rank 0 alone: a refusal that came after a collective would hang (the
    other ranks never join) and show as the process group's timeout."""
    import chainplan

    out: dict[str, Any] = {}
    if rank != 0:
        return out
    from chainplan.launch.stageplan import cuts_plan

    for case in cases:
        model = models.gpt_chain() if case.get("chain") else models.GPT(**case.get("model", {}))
        gpus = case.get("plan_gpus")  # a pipeline plan made for that many ranks
        plan = cuts_plan(list(range(1, gpus)), [1] * gpus, 1) if gpus else None
        call = models.data("gpt", 1, 1)[0][0] if case.get("example") else None
        try:
            chainplan.parallelize(model, candidate=case["candidate"], timeout_s=10, plan=plan,
                                  data_parallel=case.get("data_parallel", "fsdp"),
                                  example=call, compile=case.get("compile", False),
                                  optimizer=case.get("optimizer", "adamw"))
            out[case["name"]] = "no error"
        except Exception as e:
            out[case["name"]] = f"{type(e).__name__}: {e}"
    return out


def short_memory(rank: int, world: int, *, candidate: dict[str, Any], data_parallel: str,
                 small: int) -> dict[str, Any]:
    """Rank 1's memory ``small`` bytes (its fixed part fits, no plan does), rank 0's the
    candidate's: what each rank raised at its first step, and whether the ranks still
    agree afterwards (a collective that completes: none waits in one the other left)."""
    import chainplan

    cand = dict(candidate, memory=small) if rank == 1 else candidate
    par = chainplan.parallelize(models.build("gpt"), candidate=cand,
                                loss_fn=models.loss_of("gpt", False),
                                data_parallel=data_parallel, timeout_s=30)
    x, y = models.data("gpt", par.batch * par.candidate.dp, 1)[0]
    mine = slice(rank * par.batch, (rank + 1) * par.batch)
    error, least = "", None
    try:
        par.step(x[mine], target=y[mine])
    except Exception as e:
        error, least = f"{type(e).__name__}: {e}", getattr(e, "min_budget_bytes", None)
    flag = torch.ones(1)
    dist.all_reduce(flag)
    return {"refused": error, "least": least, "alive": flag.item()}


def killed(rank: int, world: int, *, candidate: dict[str, Any], victim: int,
           data_parallel: str) -> dict[str, Any]:
    """Rank ``victim`` dies (SIGKILL) before its second step; the others report how they
    ended and when."""
    import chainplan

    model = models.chain()
    par = chainplan.parallelize(model, candidate=candidate, loss_fn=models.mse,
                                data_parallel=data_parallel, timeout_s=30)
    for step, (x, y) in enumerate(models.data("chain", par.batch, 3)):
        if step == 1 and rank == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        t0 = time.monotonic()
        try:
            par.step(x, target=y)
        except Exception as e:
            return {"error": f"{type(e).__name__}: {e}", "waited_s": time.monotonic() - t0}
    return {"error": None}



def microbatch_peaks(rank: int, world: int, *, kind: str, candidate: dict[str, Any],
                     measured: int = 5) -> dict[str, Any]:
    """``measured`` ``Parallelized.step`` calls after two AdamW steps, each micro-batch's
    forward (to its loss) and backward (to the next forward) under a CPU memory probe of
    its own: for each step, each phase's peak as the rank's level (its parameters and
    optimizer state included); and the rank's fixed and planned figures."""
    import chainplan
    from chainplan.sharded import held_bytes

    loss_fn = models.loss_of(kind, False)
    par = chainplan.parallelize(models.build(kind), candidate=candidate, loss_fn=loss_fn,
                                timeout_s=60)
    opt = torch.optim.AdamW(list(par.parameters()), lr=1e-2)
    x, y = models.data(kind, par.batch * par.candidate.dp, 1)[0]
    mine = slice(rank * par.batch, (rank + 1) * par.batch)
    for _ in range(2):  # Checkpointed's profile and plan, the optimizer's state
        par.step(x[mine], target=y[mine])
        opt.step()
        opt.zero_grad()
    resident = held_bytes(par.parameters()) + held_bytes(
        t for state in opt.state.values() for t in state.values())
    steps = []
    for _ in range(measured):
        steps.append(_phase_peaks(par, loss_fn, x[mine], y[mine], resident))
        opt.step()
        opt.zero_grad()
    assert par.memory is not None
    return {"steps": steps, "fixed": par.memory.fixed_bytes, "planned": par.planned_bytes}


def _phase_peaks(par: Any, loss_fn: Any, x: torch.Tensor, y: torch.Tensor,
                 resident: int) -> dict[str, int]:
    """One step's phases (microbatch_peaks), each peak as the rank's level."""
    from chainplan.profiler.memory import MemoryProbe

    phases: list[tuple[str, MemoryProbe]] = []
    counts = {"forward": 0, "backward": 0}
    open_: list[MemoryProbe] = []

    def switch(phase: str | None) -> None:  # ends the open phase, opens the next
        while open_:
            open_.pop().__exit__(None, None, None)
        if phase is not None:
            probe = MemoryProbe()
            probe.__enter__()
            open_.append(probe)
            phases.append((f"{phase}{counts[phase]}", probe))
            counts[phase] += 1

    def loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        value = loss_fn(out, target)
        switch("backward")
        return value

    # Before FSDP's own pre-hook, so that a forward's all-gather is in its phase.
    hook = par.module.register_forward_pre_hook(lambda *_: switch("forward"), prepend=True)
    par.loss_fn = loss
    with MemoryProbe():  # the inner probes' results come when it exits
        par.step(x, target=y)  # its micro-batches, as it runs them
        switch(None)
    hook.remove()
    par.loss_fn = loss_fn
    level, peaks = resident, {}
    for name, probe in phases:
        peaks[name] = level + probe.peak_bytes
        level += probe.delta_bytes
    return peaks
