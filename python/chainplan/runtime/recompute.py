"""The state a recomputation replays so that it computes what the first forward did.

A stage recomputed after its first forward must compute the same values, as
``torch.utils.checkpoint`` ensures:

* **RNG**: a stage that draws random numbers (dropout) keeps the RNG state its first
  forward started with (:class:`RNGState`) and replays it for every recomputation;
* **autocast**: the autocast state of the step's forward (:class:`AutocastState`) is
  captured once and re-entered around every recomputation, which may run in the backward
  pass, outside the user's ``torch.autocast`` block;
* **BatchNorm** layers do not update their running statistics during a recomputation
  (:func:`frozen_buffers`).

Both executors use them: the stage-by-stage runner (:mod:`chainplan.executors.runner`) and
the checkpointing executor (:mod:`chainplan.executors.checkpoint`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["AutocastState", "RNGState", "frozen_buffers", "not_a_leaf"]

_BatchNorm = nn.modules.batchnorm._BatchNorm


class RNGState:
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


class AutocastState:
    """The autocast settings in force when a step's forward ran, for re-entering them.

    ``torch.autocast`` state is thread-local and the backward pass usually runs outside the
    user's ``with torch.autocast(...)`` block, so a recomputation must re-enter it explicitly
    (as ``torch.utils.checkpoint`` does) to compute in the same dtypes as the forward.
    """

    def __init__(self, device: torch.device) -> None:
        types = ["cpu"] if device.type == "cpu" else [device.type, "cpu"]
        self.settings: list[tuple[str, bool, torch.dtype]] = [
            (t, torch.is_autocast_enabled(t), torch.get_autocast_dtype(t)) for t in types]
        self.cache = torch.is_autocast_cache_enabled()

    @property
    def enabled(self) -> bool:
        """Whether autocast was on for any of the step's device types."""
        return any(on for _, on, _ in self.settings)

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for device_type, on, dtype in self.settings:
                stack.enter_context(torch.autocast(device_type, dtype=dtype, enabled=on,
                                                   cache_enabled=self.cache))
            yield


@contextlib.contextmanager
def frozen_buffers(stage: nn.Module) -> Iterator[None]:
    """Recompute a stage without updating BatchNorm running statistics.

    Each training-mode BatchNorm with running statistics updates copies of them while the
    block runs: it normalizes with the batch statistics exactly as in the first forward,
    runs the same operations (so autograd saves the same tensors, in the same order, which
    the checkpointing executor relies on) and leaves ``running_mean``, ``running_var`` and
    ``num_batches_tracked`` as they were. A stage that updates buffers some other way says
    how to recompute it without doing so with a ``frozen_buffers()`` context manager (a
    stage cut from a captured graph updates copies too,
    :class:`chainplan.graph.stage.GraphStage`).
    """
    frozen = getattr(stage, "frozen_buffers", None)
    if callable(frozen):
        with frozen():
            yield
        return
    swapped: list[tuple[nn.Module, str, torch.Tensor]] = []
    for m in stage.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats and m.training:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                b = m._buffers.get(name)
                if b is not None:
                    swapped.append((m, name, b))
                    m._buffers[name] = b.clone()
    try:
        yield
    finally:
        for m, name, b in swapped:
            m._buffers[name] = b


def not_a_leaf(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a stage sees it under autocast: an alias that is not a leaf.

    Autocast caches its casts of leaf tensors that need a gradient (it means weights), so a
    stage input detached as a leaf would be cast to the low precision once for all its uses
    and its gradient summed in that precision; in the plain model the same tensor is the
    output of an operation, cast at each use, and the casts' gradients are summed in fp32.
    BERT under bf16 autocast differed by 5e-7 after one step (its q, k and v projections
    read the layer input). Through a view, autograd passes the gradient on unchanged.

    The view is made with gradients enabled: a recomputation runs inside the backward,
    where they are off, and a view made there is one autograd does not track (no
    ``grad_fn``): the stage's operations then saw an input needing no gradient and saved
    other tensors than in the first forward (a Llama RMSNorm stage under bf16 autocast).
    """
    if not (x.requires_grad and x.is_leaf):
        return x
    with torch.enable_grad():
        return x.view_as(x)
