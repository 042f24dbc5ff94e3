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

A model that computes its loss itself and returns it among other values (``CLIPModel``
called with ``return_loss=True``: a ``CLIPOutput`` with the loss, the logits, the
embeddings and each tower's output) is backpropagated from that loss, as the training
loop does (``out.loss.backward()``), and the loop holds the whole output through the
backward: every tensor of it, the towers' last hidden states included, stays to the end of
the step (``held_bytes``), as a causal language model's logits do
(:func:`chainplan.profiler.lossmeasure.chain_end`, issue 35).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan.errors import ProfileError
from chainplan.profiler.lossmeasure import own_loss
from chainplan.profiler.measuring import (
    preallocate_grads,
    preserved,
    random_like,
    timed_passes,
)
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.profiler.sizes import held_nbytes, nbytes, shares_storage

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
        held_bytes: what the model's output keeps to the end of the step when the model
            returns its own loss among other values (module docstring), each storage once,
            the tower outputs included; 0 otherwise (bytes).
    """

    fwd_times_s: tuple[float, ...]
    bwd_times_s: tuple[float, ...]
    fwd_tmp_bytes: int
    bwd_tmp_bytes: int
    grad_bytes: int
    held_bytes: int = 0


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
        own = own_loss(result)
        if own is not None and own.requires_grad:
            return [own], None
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
            held, kept_out = 0, tensors
            if grads is None and own_loss(result) is not None:
                # The training loop holds the output through the backward: all of it to the
                # step's end (held), and in the join's backward what the model does not
                # count there already, the tower outputs a_{L_j} (kept_out).
                leaves = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
                held = held_nbytes(leaves)
                kept_out = [t for t in leaves if not any(shares_storage(t, i) for i in ins)]
            kept += held_nbytes(t for t in kept_out if not saved.is_saved(t))
            with MemoryProbe(device=device) as bwd:
                torch.autograd.backward(tensors, grads)
            del tensors, grads, result
        grad_bytes = sum(nbytes(t.grad) for t in ins if t.grad is not None)
        clear()
        fwd_times, bwd_times = timed_passes(
            forward, lambda result: partial(torch.autograd.backward, *seeds(result)), repeats,
            device, clear)
    return JoinMeasurement(fwd_times_s=tuple(fwd_times), bwd_times_s=tuple(bwd_times),
                           fwd_tmp_bytes=fwd.peak_bytes,
                           bwd_tmp_bytes=max(0, kept + bwd.peak_bytes - grad_bytes),
                           grad_bytes=grad_bytes, held_bytes=held)
