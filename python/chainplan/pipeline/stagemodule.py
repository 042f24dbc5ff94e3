"""One plan stage as a module, and forward randomness that does not depend on the schedule.

A :class:`StageModule` runs layers ``first..last`` of the chain in order: it is the module a
``torch.distributed.pipelining.PipelineStage`` wraps. Its output is made contiguous (gloo
refuses to send a non-contiguous tensor: "input tensor has to be contiguous"), and so is
the gradient of its input, which goes back over the link.

With a seed, layer ``ℓ`` of micro-batch ``b`` in step ``s`` runs with the random generator
seeded from ``(seed, s, b, ℓ)`` (:func:`layer_seed`) and the process's generator left as it
was: dropout draws the same masks whatever the partition, the schedule, the rank or the
number of processes, so a pipeline's gradients can be compared with one process's
(:func:`chainplan.pipeline.reference.reference_step`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import torch
from torch import nn

__all__ = ["MicrobatchContext", "StageModule", "contiguous_grad", "layer_seed", "run_layers"]


def layer_seed(seed: int, step: int, microbatch: int, layer: int) -> int:
    """The generator seed of ``layer`` (1-based) on ``microbatch`` in optimizer ``step``.

    A hash, the same in every process (Python's ``hash`` is salted per process).
    """
    digest = hashlib.blake2b(f"{seed}:{step}:{microbatch}:{layer}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1  # manual_seed takes a non-negative int64


@contextmanager
def _seeded(seed: int, device: torch.device) -> Iterator[None]:
    # Only this device's generator (and the CPU's) is saved, seeded and restored:
    # torch.manual_seed would reseed every GPU of the process for good.
    index = (device.index if device.index is not None else torch.cuda.current_device()) \
        if device.type == "cuda" else None
    with torch.random.fork_rng(devices=[] if index is None else [index],
                               device_type=device.type):
        torch.default_generator.manual_seed(seed)
        if index is not None:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)
        yield


def run_layers(layers: Iterable[nn.Module], x: torch.Tensor, *, first: int,
               seed: int | None, step: int, microbatch: int) -> torch.Tensor:
    """Run ``layers`` (chain layers ``first``, ``first+1``, ...) on ``x``, each seeded as
    :func:`layer_seed` says when ``seed`` is not None."""
    for i, layer in enumerate(layers):
        if seed is None:
            x = layer(x)
        else:
            with _seeded(layer_seed(seed, step, microbatch, first + i), x.device):
                x = layer(x)
    return x


def contiguous_grad(x: torch.Tensor) -> torch.Tensor:
    """``x``, whose gradient is made contiguous in the backward (it is sent to a rank)."""
    out: torch.Tensor = _ContiguousGrad.apply(x)
    return out


class _ContiguousGrad(torch.autograd.Function):
    """Identity whose backward makes the gradient contiguous (it is sent to another rank)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.contiguous()


#: What a module enters around the operations of micro-batch ``b`` (the side values of a
#: model cut from its graph, :meth:`chainplan.pipeline.layers.ModelLayers.side`).
MicrobatchContext = Callable[[int], AbstractContextManager[None]]


def _no_context(_: int) -> AbstractContextManager[None]:
    return nullcontext()


class StageModule(nn.Module):
    """Layers ``first..`` of the chain, run in order: one stage of a pipeline plan.

    The layers are the model's own modules (shared, not copied): training the module trains
    the model.

    Args:
        layers: the stage's layers, in order.
        first: the chain number (1-based) of the first of them.
        context: entered around the layers' forward of each micro-batch (default: none).

    Attributes:
        seed: the seed of :func:`layer_seed`, or None to leave randomness to the process's
            generator.
        step: the optimizer step being run (set by the runner).
        microbatch: the micro-batch being run (set around each forward by the runner).
        inference: whether the forward being run is torch's shape inference, not a step's
            (set with ``microbatch``).
    """

    def __init__(self, layers: Sequence[nn.Module], first: int,
                 context: MicrobatchContext = _no_context) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.first = first
        self.context = context
        self.seed: int | None = None
        self.step = 0
        self.microbatch = 0
        self.inference = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.requires_grad:
            x = _ContiguousGrad.apply(x)
        with self.context(self.microbatch):
            out = run_layers(self.layers, x, first=self.first, seed=self.seed, step=self.step,
                             microbatch=self.microbatch)
        return out.contiguous()
