"""The rotor executor: run a rematerialization sequence inside autograd.

A plan's sequence covers one training step: forwards, the loss (``F_all L+1`` then
``B L+1``) and backwards with the recomputations between them. The training script computes
the loss itself, so the sequence is cut at the loss:

* :class:`_ChainFunction`'s ``forward`` runs every operation before ``F_all L+1`` and returns
  the chain output a_L;
* its ``backward`` receives δ_L from autograd and runs every operation after ``B L+1``:
  recomputations (``F_*``) and stage backwards (``B``), each ``B`` calling
  ``torch.autograd.backward`` on the graph its ``F_all`` recorded, so weight gradients
  accumulate as usual and δ_{k-1} is the gradient of the stage's detached input.

Recomputation keeps training transparent: each stage saves the RNG state before its first
forward of a step and replays it for every later forward (dropout draws the same mask), and
BatchNorm layers stop updating their running statistics during recomputations (a known trap
of ``torch.utils.checkpoint``, where a recomputed forward updates them twice).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.schedule import Op, Plan

__all__: list[str] = []

_BatchNorm = nn.modules.batchnorm._BatchNorm


class _RNGState:
    """The RNG states a forward of a stage started with (CPU, and the CUDA device if used)."""

    def __init__(self, device: torch.device) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda: torch.Tensor | None = None
        self.cuda_device = device if device.type == "cuda" else None
        if self.cuda_device is not None:
            self.cuda = torch.cuda.get_rng_state(self.cuda_device)

    def consumed(self) -> bool:
        """Whether random numbers were drawn since this state was taken."""
        if not torch.equal(torch.get_rng_state(), self.cpu):
            return True
        if self.cuda is not None and self.cuda_device is not None:
            return not torch.equal(torch.cuda.get_rng_state(self.cuda_device), self.cuda)
        return False

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        devices = [self.cuda_device] if self.cuda_device is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None and self.cuda_device is not None:
                torch.cuda.set_rng_state(self.cuda, self.cuda_device)
            yield


@contextlib.contextmanager
def _frozen_batchnorm(stage: nn.Module) -> Iterator[None]:
    """Recompute a stage without updating BatchNorm running statistics.

    With ``track_running_stats`` off, a training-mode BatchNorm normalizes with the batch
    statistics exactly as in the first forward but neither touches ``running_mean`` /
    ``running_var`` nor increments ``num_batches_tracked``.
    """
    bns = [m for m in stage.modules() if isinstance(m, _BatchNorm) and m.track_running_stats]
    for m in bns:
        m.track_running_stats = False
    try:
        yield
    finally:
        for m in bns:
            m.track_running_stats = True


class _Runner:
    """Executes operations on the live tensors of one training step.

    ``acts[k]`` holds a_k stored by ``F_ck``/``F_none`` (a plain tensor), ``saved[k]`` the
    (detached input, output) pair of a recorded ``F_all``: its ā_k.
    """

    def __init__(self, stages: Sequence[nn.Module], x: torch.Tensor,
                 recomputed: frozenset[int]) -> None:
        self.stages = stages
        self.recomputed = recomputed
        self.acts: dict[int, torch.Tensor] = {0: x}
        self.saved: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.rng: dict[int, _RNGState] = {}
        self.seen: set[int] = set()
        self.device = x.device

    def _input(self, k: int, op: Op) -> torch.Tensor:
        if k - 1 in self.acts:
            return self.acts[k - 1]
        if k - 1 in self.saved:
            return self.saved[k - 1][1].detach()
        raise ScheduleError(f"{op}: input a_{k - 1} is not in memory")

    def _forward(self, k: int, x: torch.Tensor) -> torch.Tensor:
        stage = self.stages[k - 1]
        out: torch.Tensor
        if k not in self.seen:
            self.seen.add(k)
            # Only a stage the plan runs forward more than once, and that draws random
            # numbers, keeps its RNG state (5 KiB on the CPU): the others never replay.
            state = _RNGState(self.device) if k in self.recomputed else None
            out = stage(x)
            if state is not None and state.consumed():
                self.rng[k] = state
            return out
        state = self.rng.get(k)
        with state.replay() if state else contextlib.nullcontext(), _frozen_batchnorm(stage):
            out = stage(x)  # a recomputation
        return out

    def run_ops(self, ops: Sequence[Op], first: int) -> None:
        """Run ``ops``, the operations ``first``, ``first + 1``, ... of the plan's sequence.

        The index lets a subclass act between operations (the offloading executor issues
        its transfers there).
        """
        for op in ops:
            self.run(op)

    def run(self, op: Op) -> None:
        k = op.stage
        if op.kind == "B":
            self.backward(k, None)
            return
        if op.kind == "F_none" and k - 1 not in self.acts:
            raise ScheduleError(f"{op}: F_none needs the plain activation a_{k - 1}")
        x = self._input(k, op)
        if op.kind == "F_all":
            x = x.detach()
            if x.is_floating_point() or x.is_complex():
                x.requires_grad_(True)
            with torch.enable_grad():
                out = self._forward(k, x)
            self.saved[k] = (x, out)
        else:
            with torch.no_grad():
                out = self._forward(k, x)
            self.acts[k] = out
            if op.kind == "F_none":
                del self.acts[k - 1]
        if not isinstance(out, torch.Tensor):
            raise ScheduleError(
                f"stage {k} ({type(self.stages[k - 1]).__name__}) returned "
                f"{type(out).__name__}; a chain stage must return one tensor")

    def backward(self, k: int, grad: torch.Tensor | None) -> None:
        """Run B_k with δ_k = grad (or the δ the previous backward left)."""
        if k not in self.saved:
            raise ScheduleError(f"B {k}: stage {k} has no recorded forward (no F_all {k})")
        x, out = self.saved.pop(k)
        delta = self.delta if grad is None else grad
        if out.requires_grad:
            torch.autograd.backward(out, delta)
        self.delta = x.grad if x.requires_grad else None
        self.acts.pop(k - 1, None)

    delta: torch.Tensor | None = None


class _ChainFunction(torch.autograd.Function):
    """Autograd node running the forward phase in ``forward`` and the rest in ``backward``."""

    @staticmethod
    def forward(ctx: Any, executor: CheckpointedChain, x: torch.Tensor,
                _anchor: torch.Tensor) -> torch.Tensor:
        runner = executor._runner(x)
        runner.run_ops(executor.forward_ops, 0)
        ctx.runner = runner
        ctx.backward_ops = executor.backward_ops
        ctx.backward_first = len(executor.forward_ops) + 2
        ctx.input_needs_grad = x.requires_grad
        n = len(executor.stages)
        out = runner.acts.get(n)
        if out is None:
            out = runner.saved[n][1]
        return out.detach()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor | None, None]:
        runner: _Runner = ctx.runner
        ctx.runner = None  # free the step's tensors as soon as the backward is done
        runner.delta = grad
        # The model frees δ_L once B_L has used it. This frame lets go of it, but autograd's
        # engine keeps its own reference until this backward returns, so a step holds a_L
        # bytes more than predicted from B_L on (docs/executors.md).
        del grad
        runner.run_ops(ctx.backward_ops, ctx.backward_first)
        delta = runner.delta
        return None, (delta if ctx.input_needs_grad else None), None


class CheckpointedChain(nn.Module):
    """An ``nn.Module`` that runs a chain of stages with a planned schedule.

    In training (grad enabled) a forward runs the plan's forward phase and the backward
    runs its recomputations and backwards; under ``torch.no_grad()`` it is the plain chain.

    Args:
        stages: the stages of the chain, in order (see ``chainplan.stages``).
        plan: a plan for exactly ``len(stages)`` stages.

    Raises:
        ScheduleError: the plan is malformed or is for another number of stages.
    """

    def __init__(self, stages: Sequence[nn.Module], plan: Plan) -> None:
        super().__init__()
        plan.validate()
        if plan.num_stages != len(stages):
            raise ScheduleError(
                f"the plan is for {plan.num_stages} stages, the model has {len(stages)}")
        self.stages = nn.ModuleList(stages)
        self.plan = plan
        loss = len(stages) + 1
        cut = plan.sequence.index(Op("F_all", loss))
        self.forward_ops: tuple[Op, ...] = plan.sequence[:cut]
        self.backward_ops: tuple[Op, ...] = plan.sequence[cut + 2:]
        forwards = [op.stage for op in plan.sequence if op.kind != "B"]
        self.recomputed = frozenset(k for k in set(forwards) if forwards.count(k) > 1)
        self._anchor = torch.empty(0, requires_grad=True)

    def _runner(self, x: torch.Tensor) -> _Runner:
        """A runner for one training step whose chain input is ``x``."""
        return _Runner(list(self.stages), x, self.recomputed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            for stage in self.stages:
                x = stage(x)
            return x
        # The anchor requires grad so that autograd calls our backward even when neither
        # the input nor the output of the chain would (e.g. integer token ids).
        out: torch.Tensor = _ChainFunction.apply(self, x, self._anchor)
        return out
