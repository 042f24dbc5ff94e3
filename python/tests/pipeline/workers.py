"""Code that runs in the spawned ranks of the distributed tests (gloo on the CPU).

Each session initializes one process group and runs several scenarios in it, so that the
suite starts few processes; every scenario writes what it measured to ``results``, which the
parent process asserts on (an assertion inside a rank would only show as a dead process).
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["run_session"]


def chain(layers: int, width: int = 16, *, dropout: float = 0.0) -> nn.Sequential:
    """A chain of ``layers`` blocks, the same on every rank; odd blocks end with a
    non-contiguous output (gloo refuses to send one unless the executor copies it)."""
    torch.manual_seed(1234)
    blocks: list[nn.Module] = []
    for i in range(layers):
        parts: list[nn.Module] = [nn.Linear(width, width), nn.Tanh()]
        if dropout:
            parts.append(nn.Dropout(dropout))
        if i % 2:
            parts.append(_Transpose())
        blocks.append(_Block(parts))
    return nn.Sequential(*blocks)


class _Block(nn.Module):
    def __init__(self, parts: list[nn.Module]) -> None:
        super().__init__()
        self.parts = nn.ModuleList(parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for p in self.parts:
            x = p(x)
        return x


class _Transpose(nn.Module):
    """Transposes twice through a view: the result is non-contiguous (gloo refuses it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous().t()


def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.mse_loss(out, target)


def compare(plan: Any, *, layers: int, microbatches: int, steps: int = 2, dropout: float = 0.0,
            seed: int | None = None, schedule: str = "auto") -> dict[str, Any]:
    """Run ``steps`` optimizer steps of ``plan`` and of one process; report the differences."""
    from chainplan.pipeline import reference_step

    rank = dist.get_rank()
    model, ref = chain(layers, dropout=dropout), chain(layers, dropout=dropout)
    runner = plan.runner(model, loss_fn=loss_fn, microbatches=microbatches, seed=seed,
                         schedule=schedule, timeout_s=60)
    params = list(runner.parameters())  # none on a rank the plan leaves idle
    opt = torch.optim.SGD(params or [torch.zeros(1, requires_grad=True)], lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(7)
    out: dict[str, Any] = {"schedule": runner.schedule, "reason": runner.schedule_reason,
                           "grad_diff": 0.0, "loss_diff": 0.0, "grads": 0}
    for step in range(steps):
        x = torch.randn(2 * microbatches, 16, generator=gen)
        y = torch.randn(2 * microbatches, 16, generator=gen)
        loss = runner.step(x, target=y)
        ref_opt.zero_grad(set_to_none=True)
        ref_loss = reference_step(ref, x, target=y, loss_fn=loss_fn,
                                  microbatches=microbatches, seed=seed, step=step)
        out["loss_diff"] = max(out["loss_diff"], abs(loss.item() - ref_loss.item()))
        mine = dict(model.named_parameters())
        for name, p in ref.named_parameters():
            layer = int(name.split(".")[0])
            if plan.stages[_stage_of(plan, layer + 1)].gpu != rank:
                continue
            q = mine[name]
            assert q.grad is not None, name
            out["grad_diff"] = max(out["grad_diff"], (q.grad - p.grad).abs().max().item())
            out["grads"] += 1
        opt.step()
        ref_opt.step()
    return out


def _stage_of(plan: Any, layer: int) -> int:
    return next(s.index for s in plan.stages if s.first <= layer <= s.last)


def errors(plan: Any, *, layers: int, microbatches: int) -> dict[str, Any]:
    """The refusals that must come before any rank waits: type and message of each."""
    from chainplan.pipeline.plan import PipelinePlan

    out: dict[str, Any] = {}

    def catch(name: str, fn: Callable[[], Any]) -> None:
        try:
            fn()
            out[name] = "no error"
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"

    doc = dict(plan.raw, gpus=plan.gpus + 1,
               memory_per_gpu=list(plan.memory_per_gpu) + [0.0])
    catch("world", lambda: PipelinePlan.from_dict(doc).runner(chain(layers), microbatches=2))
    catch("layers", lambda: plan.runner(chain(layers + 1), microbatches=microbatches))
    wrong = PipelinePlan.from_dict(plan.raw, layer_param_bytes=[4] * layers)
    catch("params", lambda: wrong.runner(chain(layers), microbatches=microbatches))
    catch("microbatches", lambda: plan.runner(chain(layers)))
    runner = plan.runner(chain(layers), loss_fn=loss_fn, microbatches=microbatches,
                         timeout_s=60)
    catch("batch", lambda: runner.step(torch.zeros(microbatches + 1, 16),
                                       target=torch.zeros(microbatches + 1, 16)))
    # The runner is still usable: nothing was sent.
    x = torch.zeros(microbatches, 16)
    out["after"] = runner.step(x, target=x).item()
    return out


class _Fail(nn.Module):
    """Raises on the third micro-batch: a rank that fails in the middle of a step."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 4:  # the metadata probe, then micro-batches 0, 1, 2
            raise ValueError("layer broke on purpose")
        return x * 1.0


def failure(plan: Any, *, layers: int, microbatches: int) -> dict[str, Any]:
    """The last layer fails on its rank; the other ranks must say which rank failed."""
    model = chain(layers - 1)
    model.append(_Fail())
    runner = plan.runner(model, loss_fn=loss_fn, microbatches=microbatches, timeout_s=3)
    x = torch.zeros(2 * microbatches, 16)
    try:
        runner.step(x, target=x)
        got = {"type": "", "error": "no error"}
    except Exception as e:
        got = {"type": type(e).__name__, "error": str(e)}
    # The failed rank stays until the others have read its message from the store it
    # hosts (under torchrun the agent hosts the store and this wait is not needed).
    dist.barrier()
    return got


def measure(plan: Any, *, layers: int, microbatches: int, store: bool = False) -> dict[str, Any]:
    """plan.run(): the execution every rank gets back."""
    x = torch.randn(2 * microbatches, 16)
    ex = plan.run(chain(layers), x, target=x, loss_fn=loss_fn, microbatches=microbatches,
                  steps=2, store=store, timeout_s=60)
    return {"schedule": ex.schedule, "steps": ex.steps, "step_time_s": ex.step_time_s,
            "microbatch_time_s": ex.microbatch_time_s, "ranks": [r.rank for r in ex.ranks],
            "peaks": [r.peak_bytes for r in ex.ranks], "ids": list(ex.execution_ids)}


def sends(plan: Any, *, layers: int, microbatches: int) -> dict[str, Any]:
    """Peak memory of the plan's order with torch's send waits and with at most 2 pending."""
    x = torch.randn(2 * microbatches, 16)
    out = {}
    for cap in (None, 2):
        ex = plan.run(chain(layers), x, target=x, loss_fn=loss_fn, microbatches=microbatches,
                      steps=1, store=False, schedule="plan", max_outstanding_sends=cap)
        out[str(cap)] = [r.peak_bytes for r in ex.ranks]
    return out


KINDS: dict[str, Callable[..., dict[str, Any]]] = {
    "compare": compare, "errors": errors, "failure": failure, "measure": measure,
    "sends": sends}


def _kind(name: str) -> Callable[..., dict[str, Any]]:
    """The scenario function of a kind (those on models as written in model_workers)."""
    if name in KINDS:
        return KINDS[name]
    from tests.pipeline import model_workers

    return model_workers.KINDS[name]


def run_session(rank: int, world: int, port: int, spec_path: str, results: str) -> None:
    """Entry point of one spawned rank: run every scenario of the spec file in turn.

    The spec is ``{"db": path, "scenarios": [{"name", "kind", "plan", "options", "plan_id",
    "layer_param_bytes"}, ...]}``; each scenario's outcome (or its error) goes to
    ``results/rank<r>.json``.
    """
    from chainplan.pipeline.plan import PipelinePlan

    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    # The fork server's environment is the one it started with: set the test's database.
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), CHAINPLAN_DB=spec["db"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    got: dict[str, Any] = {}
    try:
        for sc in spec["scenarios"]:
            plan = PipelinePlan.from_dict(sc["plan"], plan_id=sc.get("plan_id"),
                                          layer_param_bytes=sc.get("layer_param_bytes"))
            try:
                got[sc["name"]] = _kind(sc["kind"])(plan, **sc["options"])
            except Exception as e:  # reported to the parent, which asserts on it
                got[sc["name"]] = {"error": f"{type(e).__name__}: {e}",
                                   "trace": traceback.format_exc()}
    finally:
        Path(results, f"rank{rank}.json").write_text(json.dumps(got))
    if not any(sc.get("kind") == "failure" for sc in spec["scenarios"]):
        dist.destroy_process_group()
