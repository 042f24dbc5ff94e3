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

from chainplan.executors.runner import Runner
from chainplan.ops import Op
from chainplan.pipeline.block import MicrobatchContext, StageBlock, contiguous_grad, run_layers
from chainplan.pipeline.parts import Recompute

__all__ = ["RecomputingBlock"]


class _SeededLayer(nn.Module):
    """A layer run with its block's per-layer seed (the micro-batch and step it is run for
    are the block's at the time, which the backward sets back)."""

    def __init__(self, block: RecomputingBlock, layer: nn.Module, number: int) -> None:
        super().__init__()
        self.__dict__["block"] = block  # not a child: the block owns the layer already
        self.layer = layer
        self.number = number

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b: RecomputingBlock = self.__dict__["block"]
        return run_layers([self.layer], x, first=self.number, seed=b.seed, step=b.step,
                          microbatch=b.microbatch)

    def __getattr__(self, name: str) -> Any:
        if name == "frozen_buffers":  # a graph stage recomputes on copies of its buffers
            return getattr(self.layer, name)
        return super().__getattr__(name)


class RecomputingBlock(StageBlock):
    """Layers ``first..`` of the chain as a stage that recomputes in its backward.

    Args:
        layers, first, context: as :class:`StageBlock`'s.
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
    def forward(ctx: Any, block: RecomputingBlock, x: torch.Tensor,
                anchor: torch.Tensor) -> torch.Tensor:
        n = len(block.seeded)
        runner = Runner(block.seeded, x.detach(), frozenset(range(1, n + 1)))
        ctx.block, ctx.runner = block, runner
        ctx.microbatch, ctx.step = block.microbatch, block.step
        ctx.differentiable = x.requires_grad
        ctx.inference = block.inference
        with block.context(block.microbatch):
            runner.run_ops([Op("F_ck", 1), *[Op("F_none", k) for k in range(2, n + 1)]], 0)
        return runner.acts.pop(n).contiguous()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor | None, None]:
        block: RecomputingBlock = ctx.block
        runner: Runner = ctx.runner
        ctx.block = ctx.runner = None  # the sequence runs once
        mb, step = block.microbatch, block.step
        block.microbatch, block.step = ctx.microbatch, ctx.step
        # Torch's shape inference runs a backward too; autograd would add its weight
        # gradients to the step's, which a stage recording its graph never sees.
        kept = [(p, p.grad) for p in block.parameters()] if ctx.inference else []
        try:
            runner.delta = grad.contiguous()
            del grad
            with torch.enable_grad(), block.context(ctx.microbatch):
                runner.run_ops(block.recompute.sequence, 0)
        finally:
            block.microbatch, block.step = mb, step
            for p, g in kept:
                p.grad = g
        delta = runner.delta
        runner.delta = None
        return None, (delta if ctx.differentiable else None), None
