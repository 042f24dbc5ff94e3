"""Backward steps that free the incoming gradient as a plain backward does.

A plain ``loss.backward()`` frees δ_k, the gradient of a stage's output, as soon as the
first operation of the stage's backward has consumed it. chainplan runs each backward step
``B_k`` as a separate call (``torch.autograd.backward`` on the stage's graph, inside an
autograd node of its own), and the references those calls hold would keep δ_k through the
whole step: on a CNN that is one full-resolution activation above
``torch.utils.checkpoint``. :func:`backward_step` releases δ_k's storage once the stage's
last operation has run its backward, unless that operation passed δ_k on (a view, an
addition) or the gradient is not chainplan's to free. The executor's ``B_k`` and the
profiler's measurement of ``o_B`` both go through it, so plans count what runs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.graph import GradientEdge

__all__ = ["backward_step"]


def backward_step(edge: GradientEdge, grad: torch.Tensor, *, owned: bool) -> None:
    """``torch.autograd.backward(edge, grad)``, freeing ``grad`` after its first use.

    Args:
        edge: the gradient edge of the stage output a_k.
        grad: δ_k.
        owned: whether δ_k's storage is the caller's alone. A gradient that autograd handed
            in from outside the chain (the loss's, which other branches of the user's graph
            may share) is not: it is left alone.
    """
    handle = None
    storage = grad.untyped_storage()
    ptr = storage.data_ptr()
    # An AccumulateGrad root (the stage returned its own input) may keep δ_k as the input's
    # .grad, which is δ_{k-1}: never free there.
    if owned and ptr != 0 and "AccumulateGrad" not in edge.node.name():

        def release(grad_inputs: tuple[Any, ...], _grad_outputs: tuple[Any, ...]) -> None:
            for g in grad_inputs:
                if isinstance(g, torch.Tensor) and g.untyped_storage().data_ptr() == ptr:
                    return  # passed on unchanged or as a view: still in use
            storage.resize_(0)

        handle = edge.node.register_hook(release)
    try:
        torch.autograd.backward(edge, grad)
    finally:
        if handle is not None:
            handle.remove()
