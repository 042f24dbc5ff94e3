"""Fusing a captured model's output projection with its cross-entropy loss.

When a model computes its own loss (a HuggingFace model called with ``labels=``, or any
model wrapped by :class:`chainplan.WithLoss`), its captured graph ends with the language
model's head and the loss::

    logits = aten.linear(h, W[, b])          # N x V: the step's largest activation
    [logits = logits * s]  [ / s]            # a constant scale (Cohere, Granite)
    [logits = cap * tanh(logits / cap)]      # logit soft-capping (Gemma 2)
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
  (the vocabulary stays the last, so rows stay in order), casts to float32, a bias added
  right after a projection without one (BART's ``final_logits_bias``: the fused call's
  bias, the same sum per logit, rounded once either way), one multiplication or division
  by a constant, and one logit soft-capping after it (``cap * tanh(logits / cap)``, the
  same ``cap`` twice);
* the loss takes class indices, one per row, with no class weight and no label smoothing,
  reduced by mean or sum.

**A language model's returned logits.** A HuggingFace causal language model given
``labels=`` returns its logits beside the loss, so its head has another reader.
:func:`drop_returned_logits`, called at capture unless the caller keeps the logits, takes
the logits of every *language-model head* out of what the graph returns (the output then
holds None there), so that the head fuses. A language-model head is a projection giving a
row of logits per token (three dimensions or more) wider than the hidden state it reads
(more words than hidden units), whose logits reach a cross-entropy: the structure
transformers gives every ``*ForCausalLM`` and masked language model, whatever its family.
A classifier's logits (a row per example, or fewer classes than hidden units) are small and
stay returned. Where a language-model head's loss cannot be fused (a class weight, label
smoothing, an operation between the head and the loss that is not one above),
:class:`UnfusedHead` names the reason: the caller refuses, since dropping the logits
would then save nothing.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from chainplan.runtime.linearloss import linear_cross_entropy

__all__ = ["UnfusedHead", "drop_returned_logits", "fuse_head", "fuse_linear_cross_entropy"]

_aten = torch.ops.aten
# Operations between the projection and the loss that keep each row's logits, in order.
_RESHAPES = {_aten.view.default, _aten.reshape.default, _aten.flatten.using_ints,
             _aten._unsafe_view.default, _aten.contiguous.default, _aten.alias.default}
_CASTS = {_aten.to.dtype, _aten._to_copy.default, _aten.to.dtype_layout}
_LINEAR = _aten.linear.default
_LOSS = _aten.cross_entropy_loss.default
_REDUCTIONS = {1: "mean", 2: "sum"}
# Logit soft-capping, cap * tanh(x / cap): the three operations, last first.
_SOFTCAP = (_aten.mul.Tensor, _aten.tanh.default, _aten.div.Tensor)
# How far back from a loss a language model's head is looked for (the operations between).
_REACH = 12


class UnfusedHead(Exception):
    """A language-model head whose returned logits were to be dropped has a loss the fused
    head does not compute; the message names why (a class weight, label smoothing, ...)."""


@dataclass
class _Head:
    """A fusable head: the projection, the nodes between it and the loss (the loss's side
    first) and the fused call's keyword arguments besides the target."""

    linear: fx.Node
    between: list[fx.Node]
    target: fx.Node
    options: dict[str, Any]
    bias: fx.Node | None = None  # added to the logits after the projection


def fuse_head(graph: fx.Graph, model: str, *, keep_logits: bool) -> list[int]:
    """Drop a language model's returned logits unless ``keep_logits`` and fuse every
    fusable head with its loss; the positions of the returned values dropped.

    Raises:
        UnfusedHead: a language model's logits were to be dropped but its loss cannot be
            computed without them (the message names ``model``, the option and the remedy).
    """
    dropped: list[int] = []
    if not keep_logits:
        try:
            dropped = drop_returned_logits(graph)
        except UnfusedHead as err:
            raise UnfusedHead(
                f"{model} computes its loss from its logits with {err}, which chainplan's "
                "fused head (the loss computed without holding the logits) does not "
                "compute: pass keep_logits=True (to chainplan.profile, Checkpointed or "
                "record) to keep PyTorch's head and return the logits") from None
    fuse_linear_cross_entropy(graph)
    return dropped


def fuse_linear_cross_entropy(graph: fx.Graph) -> list[str]:
    """Rewrite every fusable head and loss of ``graph`` in place (module docstring); the
    names of the loss nodes fused."""
    fused = []
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _LOSS:
            head = _match(node)
            if isinstance(head, _Head):
                _rewrite(graph, node, head)
                fused.append(node.name)
    if fused:
        graph.eliminate_dead_code()
        graph.lint()
    return fused


def drop_returned_logits(graph: fx.Graph) -> list[int]:
    """Take the logits of every language-model head out of what ``graph`` returns (None in
    their place; module docstring), so that :func:`fuse_linear_cross_entropy` fuses the
    head; the positions among the returned values replaced.

    Raises:
        UnfusedHead: a language-model head whose logits are returned has a loss that cannot
            be fused (the message says why).
    """
    out = graph.output_node()
    values = out.args[0]
    if not isinstance(values, (tuple, list)):
        return []  # one value returned: the loss, not the logits
    dropped: list[int] = []
    for loss in [n for n in graph.nodes if n.op == "call_function" and n.target is _LOSS]:
        path = _path_to_head(loss)
        if path is None or not _language_model_head(path[-1]):
            continue
        positions = [i for i, v in enumerate(values) if isinstance(v, fx.Node) and v in path]
        if not positions:
            continue
        values = type(values)(None if i in positions else v for i, v in enumerate(values))
        out.args = (values, *out.args[1:])
        head = _match(loss)
        if not isinstance(head, _Head):
            raise UnfusedHead(head)
        dropped.extend(positions)
    return sorted(dropped)


def _path_to_head(loss: fx.Node) -> list[fx.Node] | None:
    """The nodes from the loss's logits back to the ``linear`` computing them (first
    arguments followed, whatever the operations), or None when there is none nearby."""
    node = _arguments(loss)["self"]
    path: list[fx.Node] = []
    while isinstance(node, fx.Node) and node.op == "call_function" and len(path) < _REACH:
        path.append(node)
        if node.target is _LINEAR:
            return path
        node = node.args[0] if node.args else None
    return None


def _language_model_head(linear: fx.Node) -> bool:
    """Whether ``linear`` gives a row of logits per token, wider than its input (module
    docstring)."""
    out, h = _val(linear), _val(_arguments(linear)["input"])
    return out is not None and h is not None and out.dim() >= 3 and out.shape[-1] > h.shape[-1]


def _match(loss: fx.Node) -> _Head | str:
    """The head feeding ``loss`` when the pair may be fused, else why not."""
    kw = _arguments(loss)
    if kw.get("weight") is not None:
        return "a class weight (cross_entropy's weight=)"
    if float(kw.get("label_smoothing", 0.0)) != 0.0:
        return f"label smoothing (label_smoothing={float(kw['label_smoothing'])})"
    if int(kw.get("reduction", 1)) not in _REDUCTIONS:
        return "reduction='none' (a loss per token, reduced afterwards)"
    logits, target = _val(kw["self"]), _val(kw["target"])
    if (logits is None or target is None or logits.dim() != 2 or target.dim() != 1
            or target.dtype not in (torch.int64, torch.int32)
            or target.shape[0] != logits.shape[0]):
        return ("a cross-entropy that does not take one row of logits and one class index "
                "per token (probabilities as targets, or the classes in dimension 1)")
    between: list[fx.Node] = []
    scale: float | None = None
    softcap: float | None = None
    bias: fx.Node | None = None
    node = kw["self"]
    while isinstance(node, fx.Node) and node.op == "call_function" and node.target is not _LINEAR:
        others = _readers(node)
        if len(others) != 1:
            return f"the logits ({node.name}) read besides the loss, by {_names(others)}"
        # Met from the loss back: the cap first, then the scale (applied in that order).
        # An added bias comes right after the projection: nothing met after it.
        cap = _softcap(node) if softcap is None and scale is None and bias is None else None
        if cap is not None:
            softcap = cap[0]
            between.extend(cap[1])
            node = cap[1][-1].args[0]
            continue
        factor = _factor(node) if scale is None and bias is None else None
        if factor is not None:
            scale = factor
            between.append(node)
            node = node.args[0]
            continue
        added = _logits_bias(node) if bias is None else None
        if added is not None:
            bias = added
            between.append(node)
            node = node.args[0]
            continue
        if not _keeps_rows(node):
            return f"{_op(node)} between the head and the loss"
        between.append(node)
        node = node.args[0]
    if not (isinstance(node, fx.Node) and node.op == "call_function"):
        return "no linear head before the loss"
    others = _readers(node)
    if len(others) != 1:
        return f"the logits ({node.name}) read besides the loss, by {_names(others)}"
    out = _val(node)
    if out is None or out.shape[-1] != logits.shape[1] or out.numel() != logits.numel():
        return "logits whose rows the operations before the loss rearrange"
    if bias is not None and _arguments(node)["bias"] is not None:
        return "a bias added to the logits of a projection that has its own bias"
    options: dict[str, Any] = {"reduction": _REDUCTIONS[int(kw["reduction"])],
                               "ignore_index": int(kw.get("ignore_index", -100))}
    if scale is not None:
        options["scale"] = scale
    if softcap is not None:
        options["softcap"] = softcap
    return _Head(node, between, kw["target"], options, bias)


def _logits_bias(node: fx.Node) -> fx.Node | None:
    """The bias ``node`` adds to each row of logits (BART's ``final_logits_bias``, a
    ``(1, V)`` buffer), or None: an addition of a tensor that varies along the vocabulary
    only, with no ``alpha``."""
    if node.target is not _aten.add.Tensor or len(node.args) != 2 or node.kwargs:
        return None
    b, x = _val(node.args[1]), _val(node.args[0])
    if (b is None or x is None or b.dim() == 0 or b.dim() > x.dim() or b.dtype != x.dtype
            or b.shape[-1] != x.shape[-1] or b.numel() != x.shape[-1]):
        return None
    return node.args[1] if isinstance(node.args[1], fx.Node) else None


def _softcap(node: fx.Node) -> tuple[float, list[fx.Node]] | None:
    """``cap * tanh(x / cap)`` ending at ``node``: the cap and its three nodes (the
    multiplication first), or None."""
    nodes = [node]
    for target in _SOFTCAP[1:]:
        prev = nodes[-1].args[0] if nodes[-1].args else None
        if not (isinstance(prev, fx.Node) and prev.op == "call_function"
                and prev.target is target and len(_readers(prev)) == 1):
            return None
        nodes.append(prev)
    mul, _, div = nodes
    caps = [n.args[1] if len(n.args) == 2 else None for n in (mul, div)]
    if (mul.target is not _SOFTCAP[0] or not all(isinstance(c, numbers.Real) for c in caps)
            or caps[0] != caps[1] or not caps[0] or mul.kwargs or div.kwargs):
        return None
    return float(caps[0]), nodes  # type: ignore[arg-type]


def _factor(node: fx.Node) -> float | None:
    """The constant ``node`` multiplies its input by (a division: its inverse), or None."""
    if node.target not in (_aten.mul.Tensor, _aten.div.Tensor) or len(node.args) != 2:
        return None
    c = node.args[1]
    if node.kwargs or isinstance(c, bool) or not isinstance(c, numbers.Real) or not c:
        return None
    return float(c) if node.target is _aten.mul.Tensor else 1.0 / float(c)


def _names(nodes: list[fx.Node]) -> str:
    return ", ".join("what the model returns" if n.op == "output" else _op(n) for n in nodes)


def _op(node: fx.Node) -> str:
    """An operation as a message names it: ``aten.slice.Tensor``."""
    return f"aten.{getattr(node.target, '__name__', node.target)}"


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


def _val(node: Any) -> torch.Tensor | None:
    v = node.meta.get("val") if isinstance(node, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


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


def _rewrite(graph: fx.Graph, loss: fx.Node, head: _Head) -> None:
    args = _arguments(head.linear)
    h, weight, bias = args["input"], args["weight"], args["bias"]
    with graph.inserting_before(loss):
        if head.bias is not None:  # (1, V) added to the logits: the projection's (V,) bias
            bias = graph.call_function(_aten.reshape.default, (head.bias, [-1]))
            bias.meta["val"] = _val(head.bias).reshape(-1)  # type: ignore[union-attr]
        fused = graph.call_function(linear_cross_entropy, (h, weight, bias, head.target),
                                    dict(head.options))
    fused.meta = dict(loss.meta)
    # Named after the head's module (``lm_head:Linear``): the loss has none of its own.
    if "nn_module_stack" in head.linear.meta:
        fused.meta["nn_module_stack"] = head.linear.meta["nn_module_stack"]
    loss.replace_all_uses_with(fused)
    for n in [loss, *head.between, head.linear]:
        for a in _asserts(n):
            graph.erase_node(a)
        graph.erase_node(n)
