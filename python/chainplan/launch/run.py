"""What :func:`chainplan.parallelize` returns: this rank's part, and its training step.

:meth:`Parallelized.step` takes this data-parallel replica's batch (``microbatch *
microbatches`` samples; every rank of a replica passes the same), runs its forwards and
backwards (through the pipeline runner when ``pp`` > 1, else micro-batch by micro-batch),
and leaves in each parameter's ``grad`` the gradient of the global batch's mean loss,
as one process would compute it on the concatenated batches. The optimizer step is the
caller's. A rank that fails makes the others raise a
:class:`~chainplan.errors.PipelineError` naming it (:mod:`chainplan.pipeline.failure`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from chainplan.errors import PlanError
from chainplan.launch.candidate import LaunchCandidate
from chainplan.launch.rankplan import planned_peak
from chainplan.pipeline.failure import FailureBoard
from chainplan.pipeline.reference import split_microbatches
from chainplan.pipeline.runtime import failure_store

__all__ = ["Parallelized"]


class Parallelized:
    """This rank's part of a parallelized model.

    Attributes:
        candidate: what was built. groups: the rank's meshes and groups
            (:class:`~chainplan.launch.meshgroups.MeshGroups`). module: the wrapped model
            (``pp`` = 1), else None. runner: the pipeline runner (``pp`` > 1), else None.
            average: whether :meth:`step` averages the gradients over ``dp`` itself (DDP's
            mean, where DDP cannot wrap: a pipeline's stages, DTensor parameters).
        memory: with the candidate's ``memory``, what the rank holds besides activations
            (a :class:`~chainplan.sharded.RankMemory`), else None.
    """

    def __init__(self, candidate: LaunchCandidate, groups: Any, *, module: nn.Module | None = None,
                 runner: Any = None, loss_fn: Callable[..., torch.Tensor] | None = None,
                 prefix: str, average: bool = False, timeout_s: float = 300.0,
                 memory: Any = None, view: nn.Module | None = None) -> None:
        self.candidate, self.groups = candidate, groups
        self.memory = memory
        self._view = view  # the Checkpointed part planned within memory
        self.module, self.runner = module, runner
        self.loss_fn = loss_fn
        self.mesh = groups.mesh
        self._average = average  # the mean over dp of what DDP does not average
        self._board = FailureBoard(failure_store(), prefix, dist.get_rank(),
                                   dist.get_world_size(), timeout_s)
        self._step = 0

    def parameters(self) -> Iterator[nn.Parameter]:
        """What this rank's optimizer updates."""
        if self.runner is not None:
            yield from self.runner.parameters()
        else:
            assert self.module is not None
            yield from self.module.parameters()

    @property
    def planned_bytes(self) -> int | None:
        """This rank's planned peak with the candidate's ``memory``: the fixed part and the
        activation plan's peak (``Checkpointed`` plans at its first forward: None before
        the first :meth:`step`, and without ``memory``). At most ``memory``."""
        if self.memory is None or self._view is None:
            return None
        return planned_peak(self.memory, self._view)

    @property
    def batch(self) -> int:
        """Samples one replica's :meth:`step` takes: ``microbatch * microbatches``."""
        return self.candidate.microbatch * self.candidate.microbatches

    def step(self, x: torch.Tensor, *, target: torch.Tensor | None = None) -> torch.Tensor:
        """One batch's forwards and backwards (module docstring); returns the global
        batch's mean loss on every rank."""
        c = self.candidate
        if x.shape[0] != self.batch:
            raise PlanError(f"the batch has {x.shape[0]} samples but the candidate's replica "
                            f"takes microbatch {c.microbatch} x microbatches {c.microbatches} "
                            f"= {self.batch}")
        try:
            if self.runner is not None:
                loss: torch.Tensor = self.runner.step(x, target=target)
            else:
                loss = self._local_step(x, target)
            if self._average:
                _average_grads(list(self.parameters()), self.groups.dp, c.dp)
            if self.groups.dp is not None:
                dist.all_reduce(loss, group=self.groups.dp)
                loss = loss / c.dp
        except Exception as e:
            err = self._board.explain(e, self._step, self.groups.peers)
            if err is e:
                raise
            raise err from e
        self._step += 1
        return loss

    def _local_step(self, x: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
        assert self.module is not None
        n = self.candidate.microbatches
        dev = self.groups.device
        xs = split_microbatches(x, n, "the batch")
        ts = split_microbatches(target, n, "the target") if target is not None else [None] * n
        for p in self.module.parameters():
            p.grad = None
        total = torch.zeros((), device=dev)
        for i, (xb, tb) in enumerate(zip(xs, ts, strict=True)):
            last = i == n - 1
            with self._sync(last):
                out = self.module(xb.to(dev))
                loss = out.float().square().mean() if self.loss_fn is None else \
                    self.loss_fn(out, tb.to(dev)) if tb is not None else self.loss_fn(out)
                del out  # the loss keeps what its backward reads; the output is not held
                (loss / n).backward()
            total += loss.detach().float() / n
        return total

    def _sync(self, last: bool) -> Any:
        """DDP's gradient all-reduce on the last micro-batch only: between micro-batches
        its gradients accumulate in ``.grad``, which it holds whole anyway. FSDP2
        reduce-scatters every micro-batch's gradients (torchtitan's default): skipping
        it (``set_requires_gradient_sync(False)``) would keep an unsharded copy of every
        gradient from one micro-batch's backward to the next, beside the next's own
        (measured: a full copy of the parameters' bytes above the plan, issue 34),
        where the sharded gradients it accumulates instead cost one share
        (``rank_memory(microbatches=)``)."""
        m: Any = self.module
        if last or m is None or not hasattr(m, "no_sync"):
            return contextlib.nullcontext()
        return m.no_sync()


def _average_grads(params: list[nn.Parameter], group: Any, dp: int) -> None:
    """The mean of each gradient over the data-parallel replicas (DDP's reduction)."""
    for p in params:
        if p.grad is None:
            continue
        g = p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad
        dist.all_reduce(g, group=group)
        g.div_(dp)
