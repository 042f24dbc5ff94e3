"""Scenarios of the spawned ranks on models as written and on recomputing stages (gloo on
the CPU): each returns what it measured, which tests/pipeline/test_runner_models.py asserts
on. Models are built from a fixed seed, the same in every process."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["KINDS", "MICROBATCH", "example_mlp", "graph_case"]

#: The micro-batch size the graph models are profiled and run with.
MICROBATCH = 2


def graph_case(name: str, batch: int) -> Any:
    """A case of tests/graph/models.py (``gpt`` or ``denoiser``) for ``batch`` samples:
    the model's weights come first from seed 0, so they are the same for every batch size
    and in every process."""
    from tests.graph import models

    makers = {"gpt": models.make_gpt, "denoiser": models.make_denoiser}
    torch.manual_seed(0)
    return makers[name](batch=batch)


def example_mlp(width: int = 128, blocks: int = 4) -> nn.Sequential:
    """The example's residual MLP (examples/pipeline_train.py), smaller."""
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width),
                                      nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    return nn.Sequential(nn.Linear(width, width), *[Block() for _ in range(blocks)],
                         nn.Linear(width, 10))


def _diff(a: torch.Tensor | None, b: torch.Tensor | None) -> float:
    assert a is not None and b is not None
    return float((a - b).abs().max())


def compare_graph(plan: Any, *, case: str, microbatches: int, seed: int | None,
                  steps: int = 2) -> dict[str, Any]:
    """Run ``steps`` steps of a model cut from its graph and of one process; report the
    largest differences of the losses and of the gradients of this rank's parameters."""
    from chainplan.pipeline import reference_step

    data = graph_case(case, MICROBATCH * microbatches)
    model, ref = data.model, graph_case(case, MICROBATCH * microbatches).model
    x, kwargs = data.args[0], data.kwargs
    example = {k: (v[:MICROBATCH] if isinstance(v, torch.Tensor) and v.dim() > 0
                   and v.shape[0] == x.shape[0] else v) for k, v in kwargs.items()}
    runner = plan.runner(model, loss_fn=data.loss_fn, microbatches=microbatches, seed=seed,
                         timeout_s=120, example=(x[:MICROBATCH],), example_kwargs=example)
    names = {id(p): n for n, p in model.named_parameters()}
    mine = [names[id(p)] for p in runner.parameters()]
    ref_params = dict(ref.named_parameters())
    out: dict[str, Any] = {"grad_diff": 0.0, "loss_diff": 0.0, "params": sorted(mine)}
    for step in range(steps):
        loss = runner.step(x, target=data.target, **kwargs)
        for p in ref.parameters():
            p.grad = None
        ref_loss = reference_step(ref, x, target=data.target, loss_fn=data.loss_fn,
                                  microbatches=microbatches, seed=seed, step=step, **kwargs)
        out["loss_diff"] = max(out["loss_diff"], abs(loss.item() - ref_loss.item()))
        own = dict(model.named_parameters())
        for name in mine:
            out["grad_diff"] = max(out["grad_diff"], _diff(own[name].grad, ref_params[name].grad))
        with torch.no_grad():  # the same update on both sides
            for name in mine:
                own[name] -= 0.05 * own[name].grad  # type: ignore[operator]
            for p in ref.parameters():
                if p.grad is not None:
                    p -= 0.05 * p.grad
        # Parameters this rank does not hold changed on their own rank only: copy them.
        with torch.no_grad():
            for name, p in own.items():
                if name not in mine:
                    p.copy_(ref_params[name])
    return out


def compare_recompute(plan: Any, *, layers: int, microbatches: int,
                      dropout: float) -> dict[str, Any]:
    """Recomputing stages against one process (dropout seeded per layer), and, without a
    seed, against the same plan recording its graphs from the same random state: a
    recomputation that did not replay the forward's random numbers would differ."""
    from chainplan.pipeline import PipelinePlan
    from tests.pipeline import workers

    got = workers.compare(plan, layers=layers, microbatches=microbatches, dropout=dropout,
                          seed=5)
    plain = PipelinePlan.from_dict({**plan.raw, "stages": [
        {k: v for k, v in s.items() if k != "recompute"} for s in plan.raw["stages"]]},
        microbatches=microbatches)
    grads = []
    for p in (plan, plain):
        model = workers.chain(layers, dropout=dropout)
        runner = p.runner(model, loss_fn=workers.loss_fn, microbatches=microbatches,
                          timeout_s=120)
        gen = torch.Generator().manual_seed(9)
        x = torch.randn(2 * microbatches, 16, generator=gen)
        torch.manual_seed(100 + dist.get_rank())
        runner.step(x, target=x)
        grads.append([q.grad.clone() for q in runner.parameters() if q.grad is not None])
    got["unseeded_diff"] = max((_diff(a, b) for a, b in zip(*grads, strict=True)), default=0.0)
    got["unseeded_grads"] = len(grads[0])
    got["recomputing"] = [s.index for s in plan.stages_on(dist.get_rank()) if s.recompute]
    return got


def measure_memory(plan: Any, *, microbatches: int, width: int) -> dict[str, Any]:
    """One plan of the example's MLP run and measured (with an SGD optimizer): each rank's
    peak beside the plan's memory for it."""
    model = example_mlp(width)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(32 * microbatches, width, generator=gen)
    y = torch.randint(0, 10, (32 * microbatches,), generator=gen)
    runner = plan.runner(model, loss_fn=nn.functional.cross_entropy, microbatches=microbatches,
                         timeout_s=120)
    opt = torch.optim.SGD(list(runner.parameters()) or [torch.zeros(1, requires_grad=True)],
                          lr=0.01)
    ex = runner.measure(x, target=y, steps=1, store=False, optimizer=opt)
    return {"peaks": [r.peak_bytes for r in ex.ranks],
            "predicted": [r.predicted_bytes for r in ex.ranks], "fits": ex.fits,
            "within": ex.within_prediction}


KINDS = {"graph": compare_graph, "recompute": compare_recompute, "memory": measure_memory}
