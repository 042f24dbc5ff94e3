"""Which node of a stage's graph each tensor autograd saves belongs to.

Running a captured stage (:class:`~chainplan.graph.stage.GraphStage`) makes autograd save
tensors for the backward, one operation after another and always in the same order.
:func:`record_packs` runs the stage's graph node by node under a saved-tensor hook and
records, for each saved tensor (a **pack**), the node whose operation saved it (its
*owner*) and the node whose value's storage it views (its *alias*: the operation's input
or output, or a view of one), or none (an operation's own tensor, a LayerNorm's statistics,
an attention kernel's log-sum-exp), with the view itself (shape, strides, offset), so that
a value recomputed later rebuilds the saved tensor exactly. This is what the stage's
operation-level options are made of (:mod:`chainplan.graph.options`) and how the executor
fills what an option dropped (:mod:`chainplan.graph.partial`).

Positions are indices into the graph's node list (placeholders first), the same for every
stage of identical structure: a transformer's blocks share their options.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch.utils import _pytree as pytree

from chainplan.graph.aliasing import alias_root, writes

__all__ = ["Pack", "PackMap", "call", "record_packs", "supported"]


@dataclass(frozen=True)
class Pack:
    """One tensor autograd saved while the stage ran.

    Attributes:
        owner: the position of the node whose operation saved it.
        alias: the position of the node owning the storage it views (a placeholder when it
            is the stage input, a parameter, a buffer or a side value), -1 for a tensor of
            the operation's own.
        size, stride, offset, dtype: the saved tensor as a view of that storage.
    """

    owner: int
    alias: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: torch.dtype


@dataclass(frozen=True)
class PackMap:
    """The packs of one stage, and what the options and the recomputation need of its nodes.

    Attributes:
        nodes: the graph's nodes, by position.
        packs: the packs, in the order autograd saved them.
        owned: per owner position, the indices of its packs, in order.
        root: per position of a node with a tensor value, the position of the node owning
            its storage (itself, or the base of a view).
        nbytes: per storage-owning position, its storage's bytes.
        grads: per node position, whether each tensor among its flattened arguments
            required a gradient (an operation rerun to save its own tensors again must see
            the same, or autograd saves other tensors).
        views: per position of a node with a tensor value, that value as a view of its
            storage (shape, strides, offset, dtype), to rebuild it from a saved tensor.
        output: the position of the stage's output node.
    """

    nodes: tuple[fx.Node, ...]
    packs: tuple[Pack, ...]
    owned: dict[int, tuple[int, ...]]
    root: dict[int, int]
    nbytes: dict[int, int]
    grads: dict[int, tuple[bool, ...]]
    views: dict[int, tuple[tuple[int, ...], tuple[int, ...], int, torch.dtype]]
    output: int


def supported(gm: fx.GraphModule) -> bool:
    """Whether options can be computed for this graph: only placeholders and calls of
    operations, none updating a value of the stage in place (a placeholder, like a
    BatchNorm's running statistics, may be updated)."""
    placeholders = set()
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            placeholders.add(n)
        elif n.op == "output":
            continue
        elif n.op != "call_function":
            return False
        elif any(_base(w) not in placeholders for w in writes(n)):
            return False
    return True


def _base(n: fx.Node) -> fx.Node:
    """The node whose storage ``n`` views, following view operations to a non-view."""
    return alias_root(n)


def _ptr(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


def record_packs(gm: fx.GraphModule, args: list[Any]) -> PackMap:
    """Run ``gm`` on ``args`` node by node (the graph module's own code runs the same
    operations in the same order) and record its packs (module docstring).

    The run records a graph as a training forward does (gradients enabled); the caller
    throws the result away.
    """
    nodes = tuple(n for n in gm.graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    env: dict[fx.Node, Any] = {}
    owner_of: dict[int, int] = {}  # storage pointer -> position owning it
    nbytes: dict[int, int] = {}
    root: dict[int, int] = {}
    grads: dict[int, tuple[bool, ...]] = {}
    pending: list[torch.Tensor] = []
    packs: list[Pack] = []
    owners: list[int] = []

    views: dict[int, tuple[tuple[int, ...], tuple[int, ...], int, torch.dtype]] = {}

    def own(t: Any, at: int) -> None:
        if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes() > 0:
            p = _ptr(t)
            if p not in owner_of:
                owner_of[p] = at
                nbytes[at] = int(t.untyped_storage().nbytes())
            root[at] = owner_of[p]
            views[at] = (tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), t.dtype)

    def pack(t: torch.Tensor) -> torch.Tensor:
        pending.append(t)
        return t

    getitems: dict[fx.Node, dict[int, int]] = {}
    for n in nodes:
        if n.target is operator.getitem and n.args and isinstance(n.args[1], int):
            getitems.setdefault(n.args[0], {})[n.args[1]] = pos[n]
    placeholders = iter(args)
    output = -1
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
        for i, n in enumerate(nodes):
            if n.op == "placeholder":
                env[n] = next(placeholders)
                own(env[n], i)
                continue
            if n.op == "output":
                out = n.args[0]
                output = pos[out] if isinstance(out, fx.Node) else -1
                break
            a = fx.node.map_arg(n.args, env.__getitem__)
            kw = fx.node.map_arg(n.kwargs, env.__getitem__)
            grads[i] = tuple(t.requires_grad for t in pytree.tree_leaves((a, kw))
                             if isinstance(t, torch.Tensor))
            pending.clear()
            val = call(n, a, kw)
            env[n] = val
            if isinstance(val, (tuple, list)):
                for j, v in enumerate(val):
                    own(v, getitems.get(n, {}).get(j, -1))
            else:
                own(val, i)
            for t in pending:
                p = _ptr(t)
                alias = owner_of.get(p, -1) if t.untyped_storage().nbytes() > 0 else -1
                packs.append(Pack(i, alias, tuple(t.shape), tuple(t.stride()),
                                  int(t.storage_offset()), t.dtype))
                owners.append(i)
            pending.clear()
    owned: dict[int, list[int]] = {}
    for k, o in enumerate(owners):
        owned.setdefault(o, []).append(k)
    root = {k: v for k, v in root.items() if k >= 0}
    return PackMap(nodes, tuple(packs), {k: tuple(v) for k, v in owned.items()}, root,
                   {k: v for k, v in nbytes.items() if k >= 0}, grads,
                   {k: v for k, v in views.items() if k >= 0}, output)


def call(n: fx.Node, args: Any, kwargs: Any) -> Any:
    """Run the operation of a call_function node on its argument values."""
    target: Any = n.target
    return target(*args, **kwargs)
