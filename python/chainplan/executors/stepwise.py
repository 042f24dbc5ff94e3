"""The stage-by-stage executor: each stage's graph apart, one autograd node per backward step.

This is the executor the offloading plans run on (:class:`~chainplan.executors.OffloadedChain`
derives from :class:`StepwiseChain`): every forward of a stage records a graph of its own
from a detached input, so that a stage's stored activations can be moved to host memory
and back between operations. Checkpointing plans run on
:class:`~chainplan.executors.checkpoint.CheckpointedChain`, which keeps one graph for the
whole step and recomputes only what the backward reads.

A plan's sequence covers one training step: forwards, the loss (``F_all L+1`` then
``B L+1``) and backwards with the recomputations between them. The training script computes
the loss itself, so the sequence is cut at the loss:

* the module's ``forward`` runs every operation before ``F_all L+1`` and returns the chain
  output a_L, which the runner no longer holds: the loss may free it (a cross-entropy keeps
  its log-softmax, not its input), as the chain model counts it;
* the backward runs as a chain of autograd nodes, one per backward step ``B_k``. The node of
  ``B_k`` receives δ_k from autograd, runs the operations after ``B_{k+1}`` up to ``B_k``
  (recomputations ``F_*``, then ``B_k``, which calls ``torch.autograd.backward`` on the graph
  its ``F_all`` recorded, so weight gradients accumulate as usual) and returns δ_{k-1}, the
  gradient of the stage's detached input.

One node per step matters for memory: autograd keeps a node's incoming gradient until the
node returns, so a single node for the whole backward would hold δ_L (the size of the
logits, for a language model) through every later step. With a node per step each δ_k is
freed as soon as ``B_k`` has used it, exactly when the chain model frees it. The nodes
between steps exchange placeholder tensors shaped like a_k whose storage is one element.

Recomputations replay the forward's RNG and autocast state and leave BatchNorm statistics
alone (:mod:`chainplan.executors.runner`).

Stages extracted from a model's graph may read side values (a mask, a timestep embedding);
``forward(x, side)`` installs the step's :class:`~chainplan.runtime.side.SideInputs`
while the step's operations run, and B_1's node feeds their gradient join.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.inputrelease import releasable_after
from chainplan.executors.runner import Runner
from chainplan.ops import Op
from chainplan.plandoc import PlanDocument
from chainplan.runtime.side import SideInputs
from chainplan.shapecheck import warn_if_shape_differs

__all__ = ["StepwiseChain"]


class _Step:
    """What the autograd node of one backward step needs: the runner and its operations."""

    def __init__(self, runner: Runner, k: int, ops: tuple[Op, ...], first: int,
                 value: torch.Tensor, side: SideInputs | None = None) -> None:
        self.runner: Runner | None = runner
        self.value: torch.Tensor | None = value  # what the node outputs: a_k's placeholder
        self.k = k
        self.ops = ops
        self.first = first
        self.side = side  # the step's side values, read by the stages of an extracted chain
        # B_1's node passes a gradient to the side values' join, which runs after it.
        self.joins = k == 1 and side is not None and side.anchor is not None

    def run(self, grad: torch.Tensor) -> torch.Tensor | None:
        runner = self.runner
        if runner is None:
            raise ScheduleError(
                f"the backward of B {self.k} ran twice: a chainplan step cannot be "
                "backpropagated a second time (retain_graph is not supported)")
        self.runner = None  # each step runs once; the runner goes with the last reference
        runner.delta = grad
        del grad
        with _scope(self.side):
            runner.run_ops(self.ops, self.first)
        delta = runner.delta
        runner.delta = None
        return delta


class _BackwardStep(torch.autograd.Function):
    """Autograd node of ``B_k``: forward passes a_k's placeholder (or a_L) on, backward runs it."""

    @staticmethod
    def forward(ctx: Any, step: _Step, prev: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
        ctx.step = step
        ctx.prev_differentiable = prev.requires_grad and prev.is_floating_point()
        ctx.anchor = anchor.new_zeros(0) if step.joins else None
        value, step.value = step.value, None
        assert value is not None
        return value

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor | None,
                                                      torch.Tensor | None]:
        step: _Step = ctx.step
        ctx.step = None  # free the step's tensors as soon as the backward is done
        delta = step.run(grad)
        del grad
        return None, (delta if ctx.prev_differentiable else None), ctx.anchor


def _scope(side: SideInputs | None) -> contextlib.AbstractContextManager[None]:
    """The stages see ``side``'s values while a step's operations run (nothing without)."""
    return side.scope() if side is not None else contextlib.nullcontext()


def _placeholder(meta: tuple[torch.Size, torch.dtype] | None,
                 device: torch.device) -> torch.Tensor:
    """A tensor with a_k's shape and dtype over a one-element storage (zero strides).

    Autograd checks that the gradient a node returns for an input matches the input's shape
    and dtype; the placeholder carries both without holding a_k. A non-floating a_k has no
    gradient: a scalar float placeholder keeps the nodes connected.
    """
    if meta is None or not meta[1].is_floating_point:
        return torch.zeros((), device=device)
    shape, dtype = meta
    return torch.empty_strided(shape, (0,) * len(shape), dtype=dtype, device=device)


class StepwiseChain(nn.Module):
    """An ``nn.Module`` that runs a chain of stages with a planned schedule, stage by stage.

    In training (grad enabled) a forward runs the plan's forward phase and the backward
    runs its recomputations and backwards; under ``torch.no_grad()`` it is the plain chain.
    The returned output is the chain output a_L; the training script computes the loss on it
    and should keep no other reference to it past the loss (as in ``loss_fn(net(x), y)``),
    which lets the loss free it as the plan counts.

    Args:
        stages: the stages of the chain, in order (see ``chainplan.stages``).
        plan: a plan for exactly ``len(stages)`` stages.

    Raises:
        ScheduleError: the plan is malformed or is for another number of stages.
    """

    def __init__(self, stages: Sequence[nn.Module], plan: PlanDocument) -> None:
        super().__init__()
        plan.validate_for(len(stages))
        self.stages = nn.ModuleList(stages)
        self.plan = plan
        loss = len(stages) + 1
        cut = plan.sequence.index(Op("F_all", loss))
        self.forward_ops: tuple[Op, ...] = plan.sequence[:cut]
        # The operations after B_{L+1}, grouped by the backward that ends each group.
        self.backward_groups: list[tuple[int, tuple[Op, ...], int]] = []
        first = cut + 2
        group: list[Op] = []
        for i, op in enumerate(plan.sequence[cut + 2:], start=cut + 2):
            group.append(op)
            if op.kind == "B":
                self.backward_groups.append((op.stage, tuple(group), first))
                group, first = [], i + 1
        if group:
            raise ScheduleError(f"the sequence goes on after B 1 ({group[0]}, ...)")
        forwards = [op.stage for op in plan.sequence if op.kind != "B"]
        self.recomputed = frozenset(k for k in set(forwards) if forwards.count(k) > 1)
        self._anchor = torch.empty(0, requires_grad=True)
        self.release_after = releasable_after(plan.sequence)

    def _runner(self, x: torch.Tensor) -> Runner:
        """A runner for one training step whose chain input is ``x``."""
        return Runner(list(self.stages), x, self.recomputed, self.release_after)

    def forward(self, x: torch.Tensor, side: SideInputs | None = None) -> torch.Tensor:
        """Run the forward phase on the chain input ``x``; ``side`` holds the step's side
        values when the stages were extracted from a graph (:mod:`chainplan.graph`)."""
        if not torch.is_grad_enabled():
            with _scope(side):
                for stage in self.stages:
                    x = stage(x)
            return x
        warn_if_shape_differs(self.plan, x)
        runner = self._runner(x)
        with _scope(side):
            runner.run_ops(self.forward_ops, 0)
        out = runner.hand_over_output()
        # Nodes from B_1 (fed by the chain input) to B_L (producing a_L). The anchor
        # requires grad so that autograd calls the nodes even when neither the input nor
        # the output of the chain would (e.g. integer token ids); B_1's anchor is the side
        # values' join when they need gradients (chainplan.runtime.side).
        link = x
        for k, ops, first in reversed(self.backward_groups):
            value = out if k == len(self.stages) else _placeholder(runner.out_meta.get(k),
                                                                   x.device)
            step = _Step(runner, k, ops, first, value, side)
            anchor = side.anchor if step.joins and side is not None else self._anchor
            link = _BackwardStep.apply(step, link, anchor)
        return link
