"""Measuring the join of towers: the joint loss of the multi-chain model.

The join is what the model's forward does outside its towers, and the loss after it when one
is given (:mod:`chainplan.towers.parts`). It is measured as the loss stage of a chain is
(:func:`chainplan.profiler.lossmeasure.measure_loss`), with K inputs, the tower outputs
``a_{L_j}``, detached and needing gradients:

* ``fwd_tmp_bytes`` is the join forward's peak above the memory before it, what it keeps
  for its backward included (the multi-chain model adds it to what is stored while the loss
  runs);
* ``bwd_tmp_bytes`` is what the forward kept plus the backward's peak above the memory
  before it, minus the K output gradients δ_{L_j}, which the model counts itself.

A join that returns a one-element tensor (a loss) is backpropagated as it is; one that
returns other tensors (the embeddings, the logits) is given random gradients, as a chain
stage is, since the training script's loss is not known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan.errors import ProfileError
from chainplan.profiler.measuring import preallocate_grads, preserved, random_like, timed
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.profiler.sizes import held_nbytes, nbytes

__all__ = ["JoinMeasurement", "measure_join"]

JoinFn = Callable[..., object]


@dataclass(frozen=True)
class JoinMeasurement:
    """What the join costs: times in seconds, sizes in bytes.

    Attributes:
        fwd_times_s, bwd_times_s: every timed forward and backward (seconds).
        fwd_tmp_bytes: the forward's peak above the memory before it (bytes).
        bwd_tmp_bytes: what the forward keeps plus the backward's peak, minus the output
            gradients (bytes).
        grad_bytes: Σ δ_{L_j} (bytes).
    """

    fwd_times_s: tuple[float, ...]
    bwd_times_s: tuple[float, ...]
    fwd_tmp_bytes: int
    bwd_tmp_bytes: int
    grad_bytes: int


def _result_tensors(result: object) -> list[torch.Tensor]:
    """The tensors of a join's result that carry a gradient back to the towers."""
    return [t for t in pytree.tree_leaves(result)
            if isinstance(t, torch.Tensor) and t.requires_grad]


def measure_join(join: JoinFn, outputs: Sequence[torch.Tensor], *, model: nn.Module,
                 repeats: int, warmup: int, device: torch.device) -> JoinMeasurement:
    """Measure ``join(*outputs)``, the model's code after its towers and the loss.

    Args:
        join: called with one tensor per branch (the tower outputs).
        outputs: the tower outputs, one per branch.

    Keyword Args:
        model: the model (its buffers, gradients and random streams are restored).
        repeats, warmup: as for :func:`chainplan.profile`.
        device: the profiled device.

    Raises:
        ProfileError: the join's result does not depend on the towers.
    """
    ins = [o.detach().requires_grad_(o.is_floating_point() or o.is_complex()) for o in outputs]

    def forward() -> object:
        with torch.enable_grad():
            return join(*ins)

    def seeds(result: object) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        tensors = _result_tensors(result)
        if not tensors:
            raise ProfileError("the model's result does not depend on its towers' outputs")
        if len(tensors) == 1 and tensors[0].numel() == 1:
            return tensors, None
        return tensors, [random_like(t) for t in tensors]

    def clear() -> None:
        for t in ins:
            t.grad = None

    with preserved(model, device) as restore:
        preallocate_grads(model)
        for _ in range(warmup):
            tensors, grads = seeds(forward())
            torch.autograd.backward(tensors, grads)
            clear()
            del tensors, grads
        restore()
        with MemoryProbe(device=device):
            with SavedTensorProbe(module=model, exclude=ins) as saved, \
                    MemoryProbe(device=device) as fwd:
                result = forward()
            kept = saved.saved_bytes
            tensors, grads = seeds(result)
            del result
            kept += held_nbytes(t for t in tensors if not saved.is_saved(t))
            with MemoryProbe(device=device) as bwd:
                torch.autograd.backward(tensors, grads)
            del tensors, grads
        grad_bytes = sum(nbytes(t.grad) for t in ins if t.grad is not None)
        clear()
        fwd_times: list[float] = []
        for _ in range(repeats):
            result, elapsed = timed(forward, device)
            fwd_times.append(elapsed)
            del result
        bwd_times: list[float] = []
        for _ in range(repeats):
            tensors, grads = seeds(forward())
            _, elapsed = timed(partial(torch.autograd.backward, tensors, grads), device)
            bwd_times.append(elapsed)
            clear()
            del tensors, grads
    return JoinMeasurement(fwd_times_s=tuple(fwd_times), bwd_times_s=tuple(bwd_times),
                           fwd_tmp_bytes=fwd.peak_bytes,
                           bwd_tmp_bytes=max(0, kept + bwd.peak_bytes - grad_bytes),
                           grad_bytes=grad_bytes)
