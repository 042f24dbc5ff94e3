"""The step a pipeline must reproduce, in one process: the transparency oracle.

:func:`reference_step` runs the chain on the same micro-batches, one after the other, with
the same per-layer seeding (:func:`chainplan.pipeline.stagemodule.run_layers`) and the same
mean-reduced loss, and accumulates the gradient one process would: what every
:class:`~chainplan.pipeline.runner.PipelineRunner` step must leave in the parameters of its
stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan.errors import ScheduleError
from chainplan.graph.chain import extract
from chainplan.pipeline.stagemodule import run_layers
from chainplan.sequential import flatten_stages

__all__ = ["reference_step", "split_call", "split_microbatches"]


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


def split_call(x: torch.Tensor, args: Sequence[Any], kwargs: dict[str, Any],
               microbatches: int) -> list[tuple[torch.Tensor, tuple[Any, ...], dict[str, Any]]]:
    """One call of the model per micro-batch: ``x`` split along its first dimension, and
    so is every other tensor argument whose first dimension is the batch's; the others
    (a causal mask, a flag) go to every micro-batch as they are.

    Raises:
        ScheduleError: the batch does not split into equal micro-batches.
    """
    xs = split_microbatches(x, microbatches)
    batch = x.shape[0]
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    parts: list[tuple[Any, ...]] = []
    for v in leaves:
        if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == batch:
            parts.append(split_microbatches(v, microbatches, "a batched argument"))
        else:
            parts.append((v,) * microbatches)
    out = []
    for b in range(microbatches):
        a, k = pytree.tree_unflatten([p[b] for p in parts], spec)
        out.append((xs[b], tuple(a), dict(k)))
    return out



def reference_step(model: nn.Module, x: torch.Tensor, *args: Any,
                   target: torch.Tensor | None = None, loss_fn: Callable[..., torch.Tensor],
                   microbatches: int, seed: int | None = None, step: int = 0,
                   **kwargs: Any) -> torch.Tensor:
    """One optimizer step's forward and backward of ``model`` in this process.

    Micro-batch ``b`` of ``x`` (and of ``target``) runs through the model, its loss is
    divided by ``microbatches`` and its backward accumulates into ``.grad``: the full-batch
    gradient of a mean-reduced loss.

    Args:
        model: the model: an ``nn.Sequential`` runs through its flattened layers; any
            other model is called as written, ``model(xb, *args, **kwargs)`` with the
            micro-batch's part of every batched argument (as the runner splits them), or
            with a ``seed`` through the chain cut from its graph, seeded layer by layer as
            the runner seeds it.
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
    calls = split_call(x, args, kwargs, microbatches)
    ts = split_microbatches(target, microbatches, "the target") if target is not None \
        else (None,) * microbatches
    total = torch.zeros((), device=x.device)
    for b, ((xb, ab, kb), tb) in enumerate(zip(calls, ts, strict=True)):
        out, side = _forward(model, xb, ab, kb, seed=seed, step=step, microbatch=b)
        loss = loss_fn(out) if tb is None else loss_fn(out, tb)
        (loss / microbatches).backward()  # type: ignore[no-untyped-call]
        if side is not None:  # the side values' gradients, on to what computed them
            pairs = [(s, g) for s, g in zip(side.sources, side.leaf_grads(), strict=True)
                     if g is not None]
            if pairs:
                torch.autograd.backward([s for s, _ in pairs], [g for _, g in pairs])
        total = total + loss.detach()
    return total / microbatches


def _forward(model: nn.Module, x: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any],
             *, seed: int | None, step: int, microbatch: int) -> tuple[torch.Tensor, Any]:
    """One micro-batch's output, and the side values it bound (a captured chain run
    seeded layer by layer), or None."""
    if isinstance(model, nn.Sequential) and not args and not kwargs:
        layers = flatten_stages(model)
        return run_layers(layers, x, first=1, seed=seed, step=step, microbatch=microbatch), None
    if seed is None:
        out: torch.Tensor = model(x, *args, **kwargs)
        return out, None

    chain = extract(model, (x, *args), kwargs)
    a0, side = chain.bind((x, *args), kwargs)
    with side.scope():
        out = run_layers(chain.stages, a0, first=1, seed=seed, step=step, microbatch=microbatch)
    return out, side
