"""Fusing a captured model's output projection with its cross-entropy loss.

When a model computes its own loss (a HuggingFace model called with ``labels=``, or any
model wrapped by :class:`chainplan.WithLoss`), its captured graph ends with the language
model's head and the loss::

    logits = aten.linear(h, W[, b])          # N x V: the step's largest activation
    flat = aten.flatten / view / reshape / to(float32) ... (logits)
    loss = aten.cross_entropy_loss(flat, target, reduction=mean|sum, ignore_index=i)

:func:`fuse_linear_cross_entropy` replaces that tail by one call of
:func:`chainplan.runtime.linearloss.linear_cross_entropy`, which never holds the whole
logits (its docstring says how, and what it costs). The rewrite happens at capture, before
the chain is split, so the profile measures the fused head and every plan and executor of
that profile runs it: the planner's memory model stays exact.

Fused only where the result is the same function of the same inputs:

* the logits have no other reader (a model that also returns them, or computes a second
  loss on them, keeps PyTorch's head);
* between the projection and the loss only reshapes that merge the leading dimensions
  (the vocabulary stays the last, so rows stay in order) and casts to float32;
* the loss takes class indices, one per row, with no class weight and no label smoothing,
  reduced by mean or sum.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

from chainplan.runtime.linearloss import linear_cross_entropy

__all__ = ["fuse_linear_cross_entropy"]

_aten = torch.ops.aten
# Operations between the projection and the loss that keep each row's logits, in order.
_RESHAPES = {_aten.view.default, _aten.reshape.default, _aten.flatten.using_ints,
             _aten._unsafe_view.default, _aten.contiguous.default, _aten.alias.default}
_CASTS = {_aten.to.dtype, _aten._to_copy.default, _aten.to.dtype_layout}
_LINEAR = _aten.linear.default
_LOSS = _aten.cross_entropy_loss.default
_REDUCTIONS = {1: "mean", 2: "sum"}


def fuse_linear_cross_entropy(graph: fx.Graph) -> list[str]:
    """Rewrite every fusable head and loss of ``graph`` in place (module docstring); the
    names of the loss nodes fused."""
    fused = []
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _LOSS:
            match = _match(node)
            if match is not None:
                _rewrite(graph, node, *match)
                fused.append(node.name)
    if fused:
        graph.eliminate_dead_code()
        graph.lint()
    return fused


def _val(node: Any) -> torch.Tensor | None:
    v = node.meta.get("val") if isinstance(node, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _match(loss: fx.Node) -> tuple[fx.Node, list[fx.Node], dict[str, Any]] | None:
    """The projection feeding ``loss``, the nodes between them and the loss's arguments,
    or None when the pair may not be fused."""
    kw = _arguments(loss)
    if (kw.get("weight") is not None or float(kw.get("label_smoothing", 0.0)) != 0.0
            or int(kw.get("reduction", 1)) not in _REDUCTIONS):
        return None
    logits, target = _val(kw["self"]), _val(kw["target"])
    if (logits is None or target is None or logits.dim() != 2 or target.dim() != 1
            or target.dtype not in (torch.int64, torch.int32)
            or target.shape[0] != logits.shape[0]):
        return None
    between: list[fx.Node] = []
    node = kw["self"]
    while isinstance(node, fx.Node) and node.op == "call_function" and node.target is not _LINEAR:
        if len(_readers(node)) != 1 or not _keeps_rows(node):
            return None
        between.append(node)
        node = node.args[0]
    if not (isinstance(node, fx.Node) and node.op == "call_function"
            and len(_readers(node)) == 1):
        return None
    out = _val(node)
    if out is None or out.shape[-1] != logits.shape[1] or out.numel() != logits.numel():
        return None
    return node, between, {"target": kw["target"], "reduction": _REDUCTIONS[int(kw["reduction"])],
                           "ignore_index": int(kw.get("ignore_index", -100))}


def _asserts(node: fx.Node) -> list[fx.Node]:
    """The users of ``node`` that compute nothing anyone reads, and go with it: metadata
    assertions (``aten._assert_tensor_metadata`` before a ``.float()``) and views no node
    reads (a ``logits.view(...)`` the forward made and did not use)."""
    return [u for u in node.users
            if str(getattr(u.target, "_name", "")).startswith("aten::_assert")
            or (not u.users and u.target in _RESHAPES)]


def _readers(node: fx.Node) -> list[fx.Node]:
    """The nodes computing from ``node``'s value."""
    asserts = _asserts(node)
    return [u for u in node.users if u not in asserts]


def _arguments(node: fx.Node) -> dict[str, Any]:
    """An ATen call's arguments by their schema names, defaults filled in."""
    schema = node.target._schema  # type: ignore[union-attr]
    out: dict[str, Any] = {}
    for i, a in enumerate(schema.arguments):
        if i < len(node.args):
            out[a.name] = node.args[i]
        elif a.name in node.kwargs:
            out[a.name] = node.kwargs[a.name]
        else:
            out[a.name] = a.default_value if a.has_default_value() else None
    return out


def _keeps_rows(node: fx.Node) -> bool:
    """Whether ``node`` leaves each row of logits whole and in order: a reshape keeping the
    last dimension, or a cast to float32 (the fused loss computes in float32)."""
    val, src = _val(node), _val(node.args[0]) if node.args else None
    if val is None or src is None:
        return False
    if node.target in _RESHAPES:
        return val.shape[-1] == src.shape[-1] and val.numel() == src.numel()
    if node.target in _CASTS:
        return (val.dtype == torch.float32 and val.shape == src.shape
                and val.device == src.device)
    return False


def _rewrite(graph: fx.Graph, loss: fx.Node, linear: fx.Node, between: list[fx.Node],
             kw: dict[str, Any]) -> None:
    args = _arguments(linear)
    h, weight, bias = args["input"], args["weight"], args["bias"]
    with graph.inserting_before(loss):
        fused = graph.call_function(
            linear_cross_entropy, (h, weight, bias, kw["target"]),
            {"reduction": kw["reduction"], "ignore_index": kw["ignore_index"]})
    fused.meta = dict(loss.meta)
    loss.replace_all_uses_with(fused)
    for n in [loss, *between, linear]:
        for a in _asserts(n):
            graph.erase_node(a)
        graph.erase_node(n)
