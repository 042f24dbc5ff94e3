"""Freeing a stage input that nothing needs once the stage's forward has run.

Cut a chain between two layers and the executor holds the cut's activation a_k twice over:
as the output of ``F_all k`` and as the input of ``F_all k+1``, until ``B k+1``. A plain
backward holds it only if an operation saved it. Between a BatchNorm and a ReLU neither side
does (BatchNorm saves its input, ReLU its result), so a CNN cut at every layer would keep one
BatchNorm output per block that ``torch.utils.checkpoint`` frees: on the benchmark's
heterogeneous CNN, 24 MiB more than ``checkpoint_sequential`` with the same segments.

The runner therefore has autograd save aliases (a saved-tensor hook), so that every saved
tensor counts as a user of its storage, and, after ``F_all k+1``, empties a_k's storage when

* no graph saved it (``B k`` and ``B k+1`` need only its place in the graph) and stage k+1
  did not return it or a view of it: its only users are a_k and stage k+1's input,
* the plan reads a_k no more before ``B k+1`` (no other forward of stage k+1 in between),
* and nothing outside the runner holds it: the storage's users and the Python references
  to both tensors are exactly the runner's own (a stage that stashed its input or a forward
  hook that kept its output keeps it alive, and then it stays).

The tensors keep their shapes, so autograd still routes δ_k through them; a read of the
emptied storage would fail loudly, never return stale values. The chain model still counts
a_k (it does not know which stages save their inputs), so plans measure at or under their
prediction.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import torch

from chainplan.ops import Op

__all__ = ["releasable_after", "release_if_unused", "saving_aliases"]

# References the runner's own bookkeeping holds, counted by sys.getrefcount from inside
# release_if_unused: the pair in Runner.saved, the parameter and the call's argument; the
# stage input may have one more, the pin its gradient accumulator puts on the Python object
# when an operation of the stage used it. Anything above these is somebody else's.
_OUTPUT_REFS = 3
_INPUT_REFS_MAX = 4
# Users of the storage: the output tensor, its detached alias (the next stage's input) and
# the Python storage object the check itself creates. A saved alias or a view adds one.
_STORAGE_USERS = 3


def releasable_after(sequence: Sequence[Op]) -> frozenset[int]:
    """Indices of the ``F_all k+1`` operations after which a_k may be released.

    a_k may go when stage k+1 runs no other forward before its backward (a forward of it
    would read a_k again) and stage k+1 is not the first stage (a_0 is the caller's input).
    """
    found: set[int] = set()
    for i, op in enumerate(sequence):
        if op.kind != "F_all" or op.stage < 2:
            continue
        for later in sequence[i + 1:]:
            if later.stage != op.stage:
                continue
            if later.kind == "B":
                found.add(i)
            break
    return frozenset(found)


def saving_aliases() -> torch.autograd.graph.saved_tensors_hooks:
    """Autograd saves a detached alias of every tensor in the region, not the tensor itself.

    An alias is a tensor object of its own over the same storage, so every saved tensor
    shows in the storage's count of users, which is how :func:`release_if_unused` sees that
    a graph saved a_k. (Saving the tensor itself adds no user when it is an input, and makes
    a saved output reference its own graph node: a cycle only the garbage collector frees.)
    Both hooks are ``Tensor.detach`` itself, a C function: a Python hook would cost a
    Python call per saved tensor, forward and backward.
    """
    return torch.autograd.graph.saved_tensors_hooks(torch.Tensor.detach, torch.Tensor.detach)


def release_if_unused(output: torch.Tensor, x: torch.Tensor,
                      next_output: torch.Tensor) -> bool:
    """Empties the storage of ``output`` (a_k) and ``x`` (its alias, stage k+1's input)
    when only these two tensors use it (no graph saved it, and stage k+1's output
    ``next_output`` does not live in it) and only the runner refers to them; returns
    whether it did."""
    if not x.requires_grad or x.device != output.device or next_output is x:
        return False
    storage = x.untyped_storage()
    ptr = int(storage.data_ptr())
    if ptr == 0 or ptr != int(output.untyped_storage().data_ptr()):
        return False
    if torch._C._storage_Use_Count(storage._cdata) != _STORAGE_USERS:
        return False
    if sys.getrefcount(output) != _OUTPUT_REFS or sys.getrefcount(x) > _INPUT_REFS_MAX:
        return False
    storage.resize_(0)
    return True
