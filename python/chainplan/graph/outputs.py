"""What a captured model returns: the output object rebuilt around the chain's end.

A model returns a_L alone (a ResNet, a ViT), or an object holding it with other values: a
HuggingFace ``ModelOutput`` with ``logits`` and, given ``labels=``, the ``loss`` computed
from them. The chain ends at a_L (:mod:`chainplan.graph.analysis`); what ``forward`` does
after it, the **epilogue**, runs after the chain's forward on a_L and the step's side
values, and :meth:`Outputs.finish` rebuilds the object ``forward`` returns, of the same type
and with the same fields, so that a training loop reading ``out.logits`` or ``out.loss``
runs unchanged. The epilogue is recorded by autograd like any loss: the step's backward
runs through it into the chain.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx, nn
from torch.utils import _pytree as pytree

from chainplan.graph.analysis import ChainGraph
from chainplan.graph.capture import FALLBACK, CaptureError
from chainplan.graph.partition import Partition
from chainplan.graph.stage import GraphStage, mutated_buffers, readers, run_graph
from chainplan.runtime.side import SideSlot

__all__ = ["Outputs"]


class Outputs:
    """How the chain's end becomes what ``forward`` returns (module docstring).

    Attributes:
        names: each returned leaf as a user reads it (``loss``, ``logits``, ``[0]``).
        loss_index: the position among the leaves of the loss ``forward`` computed itself
            (a leaf named ``loss``, or the first of a tuple when it is a scalar), or None.
        epilogue: the module running the epilogue, or None when ``forward`` returns a_L as
            it is (possibly among constants).
    """

    def __init__(self, g: ChainGraph, part: Partition, model: nn.Module, slot: SideSlot) -> None:
        cap = g.capture
        self.out_spec = cap.out_spec
        self.names = cap.return_names()
        nodes: list[fx.Node] = []
        self._slot = slot
        # ("value", i) of the epilogue's results, ("side", name) or ("constant", v)
        self._leaves: list[tuple[str, Any]] = []
        for leaf, name in zip(cap.returns, self.names, strict=True):
            if not isinstance(leaf, fx.Node):
                self._leaves.append(("constant", leaf))
                continue
            if leaf in part.side_values:  # computed before the chain (partition.py)
                self._leaves.append(("side", leaf.name))
                continue
            if leaf is not g.end and leaf not in g.epilogue:
                raise CaptureError(
                    f"{type(model).__name__}.forward returns {name}, a tensor that does not "
                    f"depend on its first tensor argument; a chain returns what it computes "
                    f"from its input: return it from another call, or {FALLBACK}")
            if leaf not in nodes:
                nodes.append(leaf)
            self._leaves.append(("value", nodes.index(leaf)))
        self.loss_index = _loss_index(cap.returns, self.names)
        self.epilogue: GraphStage | None = None
        self._single = len(nodes) == 1
        if part.epilogue is not None:
            p = part.epilogue
            side = frozenset(part.side_values)
            self.epilogue = GraphStage(run_graph(cap, p.nodes, [g.end, *p.reads], nodes),
                                       readers(p.reads, cap, model, side),
                                       mutated_buffers(p.nodes, cap), slot, "epilogue")

    @property
    def plain(self) -> bool:
        """Whether ``forward`` returns the chain's end itself, a bare tensor."""
        return self.epilogue is None and self.out_spec.is_leaf()

    def finish(self, end: torch.Tensor) -> Any:
        """What ``forward`` returns, given the chain's end (run under the step's side
        values: the epilogue may read them)."""
        if self.plain:
            return end
        values: Any = end if self.epilogue is None else self.epilogue(end)
        if self._single:
            values = (values,)
        side = self._slot.given
        flat = [values[v] if kind == "value" else side[v] if kind == "side" else v
                for kind, v in self._leaves]
        return pytree.tree_unflatten(flat, self.out_spec)

    def loss_of(self, output: Any) -> torch.Tensor | None:
        """The loss ``forward`` computed itself, from what :meth:`finish` returned."""
        if self.loss_index is None:
            return None
        loss: torch.Tensor = pytree.tree_leaves(output)[self.loss_index]
        return loss


def _loss_index(returns: tuple[Any, ...], names: list[str]) -> int | None:
    """The leaf that is the loss ``forward`` computed: named ``loss``, or a scalar floating
    tensor first among several values (the convention of tuple-returning models)."""
    for i, name in enumerate(names):
        if name.rsplit(".", 1)[-1] == "loss" and _scalar(returns[i]):
            return i
    if len(returns) > 1 and _scalar(returns[0]) and names[0] in ("[0]", "0"):
        return 0
    return None


def _scalar(leaf: Any) -> bool:
    val = leaf.meta.get("val") if isinstance(leaf, fx.Node) else None
    return isinstance(val, torch.Tensor) and val.numel() == 1 and val.is_floating_point()
