"""The runner both executors share: it runs a plan's operations on the live tensors of a step.

A :class:`Runner` holds, for one training step, the plain activations ``a_k`` stored by
``F_ck``/``F_none``, the recorded graphs (``ā_k``) of ``F_all`` and the current gradient; the
executors decide when each operation runs (:mod:`chainplan.executors.checkpoint`) and what
moves between device and host around it (:mod:`chainplan.executors.offload`).

Recomputation keeps training transparent, as ``torch.utils.checkpoint`` does:

* **RNG**: each stage that the plan runs forward more than once and that draws random
  numbers saves its RNG state before its first forward and replays it for every later
  forward (dropout draws the same mask);
* **autocast**: the autocast state of the step's forward (enabled, dtype and cache, for the
  CPU and for the device's type) is captured once and re-entered around every recomputation,
  which may run in the backward pass, outside the user's ``torch.autocast`` block;
* **BatchNorm** layers do not update their running statistics during recomputations (a
  known trap of ``torch.utils.checkpoint``, where a recomputed forward updates them twice).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch
from torch import nn
from torch.autograd.graph import GradientEdge, get_gradient_edge

from chainplan.errors import ScheduleError
from chainplan.executors.inputrelease import release_if_unused, saving_aliases
from chainplan.gradrelease import backward_step
from chainplan.ops import Op
from chainplan.runtime.recompute import AutocastState, RNGState, frozen_buffers, not_a_leaf

__all__ = ["Runner", "not_a_leaf"]


class Runner:
    """Executes operations on the live tensors of one training step.

    ``acts[k]`` holds a_k stored by ``F_ck``/``F_none`` (a plain tensor), ``saved[k]`` the
    (detached input, output) pair of a recorded ``F_all``: its ā_k. Once the chain output has
    been handed to the training script (:meth:`hand_over_output`), the last stage's entry
    keeps the output's gradient edge instead of the tensor, so that the loss can free a_L.

    Args:
        stages: the chain's stages, in order.
        x: the chain input a_0.
        recomputed: the stages the plan runs forward more than once.
        release_after: indices (in the plan's sequence) of the ``F_all k+1`` after which
            a_k is released if nothing needs it
            (:func:`chainplan.executors.inputrelease.releasable_after`); none by default.
    """

    def __init__(self, stages: Sequence[nn.Module], x: torch.Tensor,
                 recomputed: frozenset[int], release_after: frozenset[int] = frozenset()) -> None:
        self.stages = stages
        self.recomputed = recomputed
        self.release_after = release_after
        self.acts: dict[int, torch.Tensor] = {0: x}
        self.saved: dict[int, tuple[torch.Tensor, torch.Tensor | GradientEdge]] = {}
        self.rng: dict[int, RNGState] = {}
        self.seen: set[int] = set()
        self.device = x.device
        self.autocast = AutocastState(x.device)
        # (shape, dtype) of each a_k as first computed: the gradients the backward steps
        # exchange with autograd have these.
        self.out_meta: dict[int, tuple[torch.Size, torch.dtype]] = {}
        self.delta: torch.Tensor | None = None
        self.foreign_grad = 0  # data_ptr of δ_L's storage, not the runner's to free

    def _input(self, k: int, op: Op) -> torch.Tensor:
        if k - 1 in self.acts:
            return self.acts[k - 1]
        if k - 1 in self.saved:
            out = self.saved[k - 1][1]
            if isinstance(out, torch.Tensor):
                return out.detach()
        raise ScheduleError(f"{op}: input a_{k - 1} is not in memory")

    def _forward(self, k: int, x: torch.Tensor) -> torch.Tensor:
        stage = self.stages[k - 1]
        out: torch.Tensor
        if k not in self.seen:
            self.seen.add(k)
            # Only a stage the plan runs forward more than once, and that draws random
            # numbers, keeps its RNG state (5 KiB on the CPU): the others never replay.
            state = RNGState(self.device) if k in self.recomputed else None
            out = stage(x)
            if state is not None and state.consumed():
                self.rng[k] = state
            if isinstance(out, torch.Tensor):
                self.out_meta[k] = (out.shape, out.dtype)
            return out
        state = self.rng.get(k)
        with (state.replay() if state else contextlib.nullcontext(), self.autocast.replay(),
              frozen_buffers(stage)):
            out = stage(x)  # a recomputation
        return out

    def run_ops(self, ops: Sequence[Op], first: int) -> None:
        """Run ``ops``, the operations ``first``, ``first + 1``, ... of the plan's sequence.

        The index lets a subclass act between operations (the offloading executor issues
        its transfers there).
        """
        for i, op in enumerate(ops, start=first):
            self.run(op)
            if i in self.release_after:
                self._release_input(op.stage)

    def _release_input(self, k: int) -> None:
        """After ``F_all k``: empty a_{k-1} if neither graph saved it and nothing else holds
        it (:mod:`chainplan.executors.inputrelease`)."""
        if k - 1 not in self.saved or k not in self.saved:
            return
        if not isinstance(self.saved[k - 1][1], torch.Tensor):
            return
        # No local names for the tensors: the check counts the references to them.
        release_if_unused(self.saved[k - 1][1], self.saved[k][0],  # type: ignore[arg-type]
                          self.saved[k][1])  # type: ignore[arg-type]

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
            with torch.enable_grad(), (saving_aliases() if self.release_after
                                       else contextlib.nullcontext()):
                out = self._forward(k, not_a_leaf(x) if self.autocast.enabled else x)
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

    def hand_over_output(self) -> torch.Tensor:
        """The chain output a_L, detached, for the loss; the runner stops holding it.

        The last stage's backward needs the output's place in the graph, not its values
        (unless the stage saved it, and then autograd keeps it), so the runner keeps only
        its gradient edge: a_L lives as long as the training script and the loss need it.
        """
        n = len(self.stages)
        if n in self.acts:  # a plain a_L (F_ck/F_none L): the loss consumes it (B_{L+1})
            return self.acts.pop(n).detach()
        if n not in self.saved:
            raise ScheduleError(f"the forward phase ends without a_{n}, the chain output")
        x, out = self.saved[n]
        assert isinstance(out, torch.Tensor)
        if out.requires_grad:
            self.saved[n] = (x, get_gradient_edge(out))
        return out.detach()

    def backward(self, k: int, grad: torch.Tensor | None) -> None:
        """Run B_k with δ_k = grad (or the δ the previous backward left)."""
        if k not in self.saved:
            raise ScheduleError(f"B {k}: stage {k} has no recorded forward (no F_all {k})")
        x, out = self.saved.pop(k)
        delta = self.delta if grad is None else grad
        self.delta = None
        if isinstance(out, torch.Tensor) and out.requires_grad:
            # Backward from a_k's gradient edge, not from a_k: autograd frees a_k as soon
            # as the operation that saved it has run its backward (or at once if none
            # did), as in a plain backward; holding the tensor here would keep it through
            # the whole step, and the profiler measures o_B the same way.
            out = get_gradient_edge(out)
        if isinstance(out, GradientEdge) and delta is not None:
            # δ_L comes from the loss's backward and may be shared with the rest of the
            # user's graph; the δ_k before it are the runner's own (the x.grad of B_{k+1}).
            ptr = delta.untyped_storage().data_ptr()
            if k == len(self.stages):
                self.foreign_grad = ptr
            backward_step(out, delta, owned=ptr != self.foreign_grad)
        elif isinstance(out, GradientEdge):
            torch.autograd.backward(out)
        del out, delta
        self.delta = x.grad if x.requires_grad else None
        self.acts.pop(k - 1, None)

