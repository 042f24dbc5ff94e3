"""A stage that keeps only its input and recomputes in its backward (checkpointing inside
pipeline stages, docs/pipeline.md).

A plan stage with a ``recompute`` section runs its forward without recording a graph: it
keeps its input, as every stage does, and nothing else for the micro-batches in flight.
When the gradient of its output arrives, its backward runs the plan's rotor sequence of the
stage's layers (recomputing forwards, ``F_all``/``F_ck``/``F_none``, and backwards ``B``)
within the stage's budget, starting from the kept input and that gradient: rotor's
``C_MP(i, j, budget)``, which the planner counted as the stage's backward time.

The sequence runs on the checkpointing executor's :class:`~chainplan.executors.runner.Runner`,
so the recomputations replay the forward's random numbers and autocast state and leave
BatchNorm statistics alone, as ``plan.wrap(model)`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from chainplan._moved import warn_renamed
from chainplan.executors.runner import Runner
from chainplan.ops import Op
from chainplan.pipeline.parts import Recompute
from chainplan.pipeline.stagemodule import (
    MicrobatchContext,
    StageModule,
    contiguous_grad,
    run_layers,
)

__all__ = ["RecomputingStageModule"]


class _SeededLayer(nn.Module):
    """A layer run with its module's per-layer seed (the micro-batch and step it is run for
    are the module's at the time, which the backward sets back)."""

    def __init__(self, module: RecomputingStageModule, layer: nn.Module, number: int) -> None:
        super().__init__()
        self.__dict__["module"] = module  # not a child: the stage module owns the layer already
        self.layer = layer
        self.number = number

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b: RecomputingStageModule = self.__dict__["module"]
        return run_layers([self.layer], x, first=self.number, seed=b.seed, step=b.step,
                          microbatch=b.microbatch)

    def __getattr__(self, name: str) -> Any:
        if name == "frozen_buffers":  # a captured layer recomputes on copies of its buffers
            return getattr(self.layer, name)
        return super().__getattr__(name)


class RecomputingStageModule(StageModule):
    """Layers ``first..`` of the chain as a stage that recomputes in its backward.

    Args:
        layers, first, context: as :class:`StageModule`'s.
        recompute: the plan stage's budget and sequence.
    """

    def __init__(self, layers: Sequence[nn.Module], first: int, recompute: Recompute,
                 context: MicrobatchContext | None = None) -> None:
        if context is None:
            super().__init__(layers, first)
        else:
            super().__init__(layers, first, context)
        self.recompute = recompute
        self.seeded = [_SeededLayer(self, layer, first + i) for i, layer in enumerate(layers)]
        # The first stage's input needs no gradient: without an input that does, autograd
        # would never run the backward, which computes the weights' gradients.
        self._anchor = torch.zeros((), requires_grad=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.requires_grad:
            x = contiguous_grad(x)
        out: torch.Tensor = _Recomputed.apply(self, x, self._anchor)
        return out


class _Recomputed(torch.autograd.Function):
    """Forward: the stage's layers without a graph (their random numbers kept for the
    replay). Backward: the plan's sequence from the kept input and the output's gradient."""

    @staticmethod
    def forward(ctx: Any, module: RecomputingStageModule, x: torch.Tensor,
                anchor: torch.Tensor) -> torch.Tensor:
        n = len(module.seeded)
        runner = Runner(module.seeded, x.detach(), frozenset(range(1, n + 1)))
        ctx.module, ctx.runner = module, runner
        ctx.microbatch, ctx.step = module.microbatch, module.step
        ctx.differentiable = x.requires_grad
        ctx.inference = module.inference
        with module.context(module.microbatch):
            runner.run_ops([Op("F_ck", 1), *[Op("F_none", k) for k in range(2, n + 1)]], 0)
        return runner.acts.pop(n).contiguous()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor | None, None]:
        module: RecomputingStageModule = ctx.module
        runner: Runner = ctx.runner
        ctx.module = ctx.runner = None  # the sequence runs once
        mb, step = module.microbatch, module.step
        module.microbatch, module.step = ctx.microbatch, ctx.step
        # Torch's shape inference runs a backward too; autograd would add its weight
        # gradients to the step's, which a stage recording its graph never sees.
        kept = [(p, p.grad) for p in module.parameters()] if ctx.inference else []
        try:
            runner.delta = grad.contiguous()
            del grad
            with torch.enable_grad(), module.context(ctx.microbatch):
                runner.run_ops(module.recompute.sequence, 0)
        finally:
            module.microbatch, module.step = mb, step
            for p, g in kept:
                p.grad = g
        delta = runner.delta
        runner.delta = None
        return None, (delta if ctx.differentiable else None), None


def __getattr__(name: str) -> Any:
    # The old name of RecomputingStageModule, kept for code that imported it (warns).
    if name == "RecomputingBlock":
        warn_renamed("chainplan.pipeline.recompute.RecomputingBlock",
                     "chainplan.pipeline.recompute.RecomputingStageModule")
        return RecomputingStageModule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
