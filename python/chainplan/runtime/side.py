"""Side inputs of an extracted chain: values every stage may read that no stage produces.

A model captured as a graph (:mod:`chainplan.graph`) reads more than the chain's activations:
an attention mask passed to ``forward``, position ids, a timestep embedding computed once
from an argument. The stages read these **side values** from a shared :class:`SideSlot`;
:class:`SideInputs` holds one training step's values and installs them in the slot while
that step's operations run (its forwards, and each backward step with its recomputations),
so two steps in flight at once (two forwards before one backward) each see their own.

A side value that needs a gradient (it depends on trained weights, e.g. a timestep MLP) is
handed to the stages as a detached leaf: every stage that reads it adds its part of the
gradient there. The step's join node (:attr:`SideInputs.anchor`) is an input of the node of
``B_1``, the last backward step, so autograd runs it when every stage is done; it passes the
summed gradients on to the graph that computed the values, once. Without this, the first
stage to run its backward would free that graph and the next one would fail.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import torch

__all__ = ["SideInputs", "SideSlot"]


class SideSlot:
    """Where the stages of one extracted chain find the side values of the step being run.

    Attributes:
        values: side values by name; empty outside a step.
        given: the same values as the step made them, before any was detached: what a
            model returns of them (an encoder-decoder's encoder output), so that a loss
            reading it reaches the graph that computed it.
    """

    def __init__(self) -> None:
        self.values: Mapping[str, torch.Tensor] = {}
        self.given: Mapping[str, torch.Tensor] = {}


class SideInputs:
    """The side values of one training step and the join of their gradients.

    Args:
        slot: the slot of the chain's stages.
        values: the side values by name, as the prelude or the caller made them.

    Keyword Args:
        detach: hand values needing a gradient to the stages as detached leaves joined
            after ``B_1`` (default: True); False leaves them in the graph, for stages run
            one after the other under plain autograd.

    Attributes:
        values: what the stages read: the given values, those needing a gradient replaced
            by detached leaves.
        anchor: None when no value needs a gradient; otherwise an empty tensor whose
            backward hands the leaves' gradients to the values (pass it to the node of
            ``B_1``).
    """

    def __init__(self, slot: SideSlot, values: Mapping[str, torch.Tensor], *,
                 detach: bool = True) -> None:
        self.slot = slot
        self.given: Mapping[str, torch.Tensor] = dict(values)
        staged: dict[str, torch.Tensor] = {}
        self.sources: list[torch.Tensor] = []
        self.leaves: list[torch.Tensor] = []
        for name, v in values.items():
            if detach and v.requires_grad and torch.is_grad_enabled():
                leaf = v.detach().requires_grad_(True)
                self.sources.append(v)
                self.leaves.append(leaf)
                staged[name] = leaf
            else:
                staged[name] = v
        self.values: Mapping[str, torch.Tensor] = staged
        self.anchor: torch.Tensor | None = None
        if self.sources:
            self.anchor = _Join.apply(self, *self.sources)

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Install this step's values in the slot while the block runs."""
        before = self.slot.values, self.slot.given
        self.slot.values, self.slot.given = self.values, self.given
        try:
            yield
        finally:
            self.slot.values, self.slot.given = before

    def attached(self) -> SideInputs:
        """These values as one autograd graph reads them (``detach=False``): the sources in
        place of their detached leaves, so that a step recorded as one graph
        (:class:`~chainplan.executors.CheckpointedChain`) hands their gradients on itself;
        ``self`` when no value needs a gradient."""
        if not self.leaves:
            return self
        source = {id(leaf): src for leaf, src in zip(self.leaves, self.sources, strict=True)}
        values = {name: source.get(id(v), v) for name, v in self.values.items()}
        return SideInputs(self.slot, values, detach=False)

    def leaf_grads(self) -> list[torch.Tensor | None]:
        """The gradients the stages left in the leaves (None where none reached)."""
        return [leaf.grad for leaf in self.leaves]


class _Join(torch.autograd.Function):
    """Forward: an empty tensor depending on the side values. Backward (after ``B_1``): the
    gradients the stages accumulated in the leaves, handed to the values."""

    @staticmethod
    def forward(ctx: Any, side: SideInputs, *sources: torch.Tensor) -> torch.Tensor:
        ctx.side = side
        return sources[0].new_empty(0)

    @staticmethod
    def backward(ctx: Any, _grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        side: SideInputs = ctx.side
        ctx.side = None
        grads = side.leaf_grads()
        for leaf in side.leaves:
            leaf.grad = None
        return (None, *grads)

