"""The step a pipeline must reproduce, in one process: the transparency oracle.

:func:`reference_step` runs the chain on the same micro-batches, one after the other, with
the same per-layer seeding (:func:`chainplan.pipeline.block.run_layers`) and the same
mean-reduced loss, and accumulates the gradient one process would: what every
:class:`~chainplan.pipeline.runner.PipelineRunner` step must leave in the parameters of its
stages.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.pipeline.block import run_layers
from chainplan.stages import flatten_stages

__all__ = ["reference_step", "split_microbatches"]


def split_microbatches(x: torch.Tensor, microbatches: int, what: str = "the batch") \
        -> tuple[torch.Tensor, ...]:
    """Split ``x`` along its first dimension into ``microbatches`` equal parts.

    Raises:
        ScheduleError: the first dimension does not divide evenly (torch's pipelining
            sizes every receive buffer from the first micro-batch).
    """
    if x.dim() == 0 or x.shape[0] % microbatches:
        size = "a 0-dimensional tensor" if x.dim() == 0 else f"{x.shape[0]} samples"
        raise ScheduleError(f"{what} ({size}) does not split into {microbatches} equal "
                            f"micro-batches: use a batch size that is a multiple of "
                            f"{microbatches}")
    return tuple(x.chunk(microbatches))


def reference_step(model: nn.Module, x: torch.Tensor, *, target: torch.Tensor | None = None,
                   loss_fn: Callable[..., torch.Tensor], microbatches: int,
                   seed: int | None = None, step: int = 0) -> torch.Tensor:
    """One optimizer step's forward and backward of ``model`` in this process.

    Micro-batch ``b`` of ``x`` (and of ``target``) runs through the chain's layers, its
    loss is divided by ``microbatches`` and its backward accumulates into ``.grad``: the
    full-batch gradient of a mean-reduced loss.

    Args:
        model: the chain (:func:`chainplan.stages.flatten_stages`).
        x: the whole batch; its first dimension must divide into ``microbatches``.

    Keyword Args:
        target: the whole batch's target, split likewise (None: ``loss_fn(output)``).
        loss_fn: ``loss_fn(output, target)`` or ``loss_fn(output)``, mean-reduced.
        microbatches: N.
        seed: as the runner's ``seed`` (None: the process's generator).
        step: the step number the runner would be at (0 for its first ``step``).

    Returns:
        The mean of the micro-batch losses, detached.
    """
    layers = flatten_stages(model)
    xs = split_microbatches(x, microbatches)
    ts = split_microbatches(target, microbatches, "the target") if target is not None \
        else (None,) * microbatches
    total = torch.zeros((), device=x.device)
    for b, (xb, tb) in enumerate(zip(xs, ts, strict=True)):
        out = run_layers(layers, xb, first=1, seed=seed, step=step, microbatch=b)
        loss = loss_fn(out) if tb is None else loss_fn(out, tb)
        (loss / microbatches).backward()  # type: ignore[no-untyped-call]
        total = total + loss.detach()
    return total / microbatches
