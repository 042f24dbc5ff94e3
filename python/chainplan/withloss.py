"""A model and its loss as one module, so that chainplan plans (and fuses) the loss too.

Most training scripts compute the loss outside the model: ``loss_fn(model(x), y)``. The
chain chainplan plans then ends at the model's output, and the loss's memory (for a
language model, logits and log-probabilities over the whole vocabulary, usually the
step's largest tensors) lies beyond the plan's reach. :class:`WithLoss` makes the loss
part of the forward, as a HuggingFace model given ``labels=`` does::

    net = chainplan.WithLoss(model, F.cross_entropy)
    prof = chainplan.profile(net, x, labels=y)
    run = chainplan.plan(prof, budget="min").wrap(net)
    run(x, labels=y)["loss"].backward()

Captured from its graph, such a model's output projection and cross-entropy run fused
(:mod:`chainplan.graph.fuseloss`): the logits are never held whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["WithLoss"]


class WithLoss(nn.Module):
    """``model`` followed by ``loss_fn``: ``forward(*args, labels, **kwargs)`` returns
    ``{"loss": loss_fn(model(*args, **kwargs), labels)}`` (module docstring).

    Args:
        model: the model; its parameters are this module's (``net.model``).
        loss_fn: the loss, called as ``loss_fn(output, labels)``.
    """

    def __init__(self, model: nn.Module, loss_fn: Callable[[Any, torch.Tensor], torch.Tensor]):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"WithLoss(model, loss_fn): model is a {type(model).__name__}, "
                            "not an nn.Module")
        if not callable(loss_fn):
            raise TypeError(f"WithLoss(model, loss_fn): loss_fn is a "
                            f"{type(loss_fn).__name__}, not a callable")
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *args: Any, labels: torch.Tensor, **kwargs: Any) -> dict[str, torch.Tensor]:
        return {"loss": self.loss_fn(self.model(*args, **kwargs), labels)}
