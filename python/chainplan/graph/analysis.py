"""What the split needs to know about a captured graph: the main path, where it can be cut,
and how deep in the module tree each cut lies.

Vocabulary used across :mod:`chainplan.graph`:

* **main nodes** depend on the chain input a_0; the others are **side nodes**, computed from
  side inputs, parameters, buffers and constants only (a causal mask, position ids, rotary
  tables, a timestep embedding);
* the **end** of the chain, a_L, is the tensor every returned value that depends on a_0 is
  computed from: the returned tensor itself for a model returning one, the logits for a
  HuggingFace model returning its logits and the loss it computed from ``labels=`` (the
  nearest cut point common to all of them). What follows it, the loss computed inside
  ``forward`` and the assembly of the output object, is the **epilogue**: it runs once per
  step after the chain, like the loss, and may read no parameter (a value returned from the
  middle of the model, such as every layer's hidden states, is refused: it would need the
  whole chain kept);
* the **path** is the main nodes on the way from a_0 to the end, plus main nodes with a
  side effect (an in-place update) that the end does not read; pure dead ends are
  dropped;
* a **cut** is a path node that every path from a_0 to the output crosses
  (:func:`chainplan.graph.cuts.cut_points`), whose value is one tensor that no later
  operation updates in place (a chain stage must keep its input intact for recomputation);
* the **level** of a cut is the number of modules that contain it and go on after it: 0
  between the blocks a model's forward calls one after the other, 1 inside such a block.
  ``nn.Sequential`` containers do not count: the boundaries between their children are
  those of the module that calls the container (``ModuleList`` and ``ModuleDict`` are
  never called, so they never count).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch import fx

from chainplan.graph.aliasing import alias_root, writes
from chainplan.graph.capture import FALLBACK, Capture, CaptureError
from chainplan.graph.cuts import cut_points

__all__ = ["ChainGraph", "analyze", "is_view", "nbytes"]


def is_view(node: fx.Node) -> bool:
    """Whether ``node`` makes no new memory and updates nothing: a view, ``getitem`` of a
    multi-output operation, or a metadata assertion."""
    target = node.target
    if target is operator.getitem:
        return True
    if not isinstance(target, torch._ops.OpOverload):
        return False
    if str(getattr(target, "_name", "")).startswith("aten::_assert"):
        return True
    returns = target._schema.returns
    return (bool(returns) and returns[0].alias_info is not None
            and not returns[0].alias_info.is_write and not writes(node))


def nbytes(node: fx.Node) -> int:
    """Bytes a node's tensor value holds alive: its storage's, so that a view counts its
    base (``h[:, :-1]`` holds all of ``h``), as the profiler counts it
    (:mod:`chainplan.profiler.sizes`); 0 for other values."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return 0
    try:
        return int(val.untyped_storage().nbytes())
    except (NotImplementedError, RuntimeError):  # no storage (a subclass): its elements
        return int(val.numel() * val.element_size())


def _stack(node: fx.Node, containers: frozenset[str]) -> list[tuple[str, str, str]]:
    """The module calls a node sits in, outermost first: (call key, path, type name), the
    root and ``nn.Sequential`` containers left out (a container only calls its children
    in turn, so their boundaries are as good as the caller's)."""
    stack = node.meta.get("nn_module_stack") or {}
    out = []
    for key, (path, kind) in stack.items():
        if path and path not in containers:
            name = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
            out.append((str(key), str(path), name.rsplit(".", 1)[-1]))
    return out


@dataclass(frozen=True)
class ChainGraph:
    """The facts of a captured graph the split works from.

    Attributes:
        capture: the capture.
        pos: every node's position in the graph.
        main: the main nodes (a_0 included).
        end: the chain's end a_L (module docstring).
        epilogue: the main nodes after the end that compute what ``forward`` returns.
        path: the path nodes in graph order; ``path[0]`` is a_0's placeholder.
        edges: the edges between path nodes, as indices into ``path``.
        cuts: the indices of the cut candidates in ``path``, increasing; the output's index
            is the last.
        level: the level of each cut candidate, by index.
        params: per path node, the parameters it reads, directly or through side nodes.
        stacks: per node, its module calls (call key, path, type), outermost first.
    """

    capture: Capture
    pos: dict[fx.Node, int]
    main: frozenset[fx.Node]
    end: fx.Node
    epilogue: frozenset[fx.Node]
    path: tuple[fx.Node, ...]
    edges: tuple[tuple[int, int], ...]
    cuts: tuple[int, ...]
    level: dict[int, int]
    params: dict[fx.Node, frozenset[fx.Node]]
    stacks: dict[fx.Node, list[tuple[str, str, str]]]


def analyze(cap: Capture, *, epilogue_share: float = 0.0,
            index_side: bool = False) -> ChainGraph:
    """Find the path, its cut candidates and their levels (module docstring).

    ``epilogue_share`` is the largest share of the model's parameters the epilogue may read
    (default 0: a chain's epilogue runs no layer). A tower of a multi-chain model passes a
    small share: its pooling head (a LayerNorm, a pooler) runs with the join
    (:mod:`chainplan.towers`).

    With ``index_side``, integer values computed from a_0 by integer operations only (the
    position of each sequence's end-of-text token, which a text tower's pooler reads) are
    side values computed from the argument, not activations of the chain: otherwise the
    pooler's read of them joins the output to a_0 and leaves no cut point before it.

    The time complexity is O(|V| + |E|) plus the parameter sets' sizes.
    """
    nodes = list(cap.graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    main = _downstream(cap.main, index_side=index_side)
    last_write: dict[fx.Node, int] = {}
    for n in nodes:
        for w in writes(n):
            root = alias_root(w)
            last_write[root] = max(last_write.get(root, -1), pos[n])
    end = _chain_end(cap, main, pos, last_write)
    tail = _downstream(end) - {end}
    effects = [n for n in main if n.op == "call_function"
               and (writes(n) or n.is_impure(impure_random=False))]
    returned = [r for r in cap.returns if isinstance(r, fx.Node) and r in tail]
    epilogue = _upstream(returned + [n for n in effects if n in tail], tail)
    _check_epilogue(cap, epilogue, main, epilogue_share)
    reach = _upstream([end], main)
    # Main dead ends that update something in place stay with the stage that feeds them.
    reach |= _upstream([n for n in effects if n not in reach and n not in tail], main - tail)
    path = sorted(reach | {cap.main}, key=pos.__getitem__)
    index = {n: i for i, n in enumerate(path)}
    edges = tuple((index[u], index[v]) for v in path for u in v.all_input_nodes if u in index)
    out = index[end]
    cuts = [i for i in cut_points(len(path), edges) if i < out and _cuttable(path[i], pos,
                                                                             last_write)]
    cuts.append(out)
    stacks = {n: _stack(n, cap.containers) for n in nodes}
    last_in: dict[str, int] = {}
    for i, n in enumerate(path):
        for key, _, _ in stacks[n]:
            last_in[key] = i
    level = {i: sum(1 for key, _, _ in stacks[path[i]] if last_in[key] > i) for i in cuts}
    params = _params_read(path, cap)
    return ChainGraph(cap, pos, frozenset(main), end, frozenset(epilogue), tuple(path), edges,
                      tuple(cuts), level, params, stacks)


def _chain_end(cap: Capture, main: set[fx.Node], pos: dict[fx.Node, int],
               last_write: dict[fx.Node, int]) -> fx.Node:
    """The nearest cut point that every returned value depending on a_0 is computed from."""
    outs = list(dict.fromkeys(r for r in cap.returns if isinstance(r, fx.Node) and r in main))
    if not outs:
        what = ("returns its input unchanged" if cap.main in cap.returns
                else "returns a value that does not depend on its first tensor argument")
        raise CaptureError(f"forward {what}: there is no chain from the input to the output "
                           f"to cut; {FALLBACK}")
    if len(outs) == 1:
        if outs[0] is cap.main:
            raise CaptureError(f"forward returns its input unchanged: there is no chain from "
                               f"the input to the output to cut; {FALLBACK}")
        return outs[0]
    reach = sorted(_upstream(outs, main) | {cap.main}, key=pos.__getitem__)
    index = {n: i for i, n in enumerate(reach)}
    sink = len(reach)
    edges = [(index[u], index[v]) for v in reach for u in v.all_input_nodes if u in index]
    edges += [(index[o], sink) for o in outs]
    found = [reach[i] for i in cut_points(sink + 1, edges) if i < sink
             and _cuttable(reach[i], pos, last_write)]
    if not found:
        raise CaptureError(_spread_returns(cap, outs))
    return found[-1]


def _check_epilogue(cap: Capture, epilogue: set[fx.Node], main: set[fx.Node],
                    share: float) -> None:
    """Refuse an epilogue that runs layers (returned values taken along the way): one that
    reads parameters, or with ``share`` > 0 more than that share of the model's."""
    read = {u for n in epilogue for u in n.all_input_nodes
            if (spec := cap.inputs.get(u)) is not None and spec.kind == "parameter"}
    if not read:
        return
    if share > 0:
        params = [n for n, spec in cap.inputs.items() if spec.kind == "parameter"]
        if sum(_numel(n) for n in read) <= share * sum(_numel(n) for n in params):
            return
    outs = [r for r in cap.returns if isinstance(r, fx.Node) and r in main]
    raise CaptureError(_spread_returns(cap, outs))


def _numel(node: fx.Node) -> int:
    val = node.meta.get("val")
    return int(val.numel()) if isinstance(val, torch.Tensor) else 0


def _spread_returns(cap: Capture, outs: list[fx.Node]) -> str:
    names = cap.return_names()
    taken = [names[i] for i, r in enumerate(cap.returns) if isinstance(r, fx.Node) and r in outs]
    return (f"forward returns {len(taken)} values computed from its input at different "
            f"depths ({', '.join(taken[:6])}{', ...' if len(taken) > 6 else ''}): a chain ends "
            "with the one tensor the loss reads, and values taken from the middle of the "
            "model (hidden states, attention weights) would keep the whole chain in memory; "
            "call the model so that it returns only its output and its loss (for "
            "HuggingFace models: output_hidden_states=False, output_attentions=False)")


def _cuttable(node: fx.Node, pos: dict[fx.Node, int], last_write: dict[fx.Node, int]) -> bool:
    """A stage boundary holds one tensor that nothing updates in place afterwards."""
    if not isinstance(node.meta.get("val"), torch.Tensor):
        return False
    return last_write.get(alias_root(node), -1) <= pos[node]


def _downstream(start: fx.Node, *, index_side: bool = False) -> set[fx.Node]:
    """The nodes that depend on ``start``; with ``index_side``, leaving out integer values
    computed from it through integer values only (:func:`analyze`)."""
    seen = {start}
    index: set[fx.Node] = set()
    todo = [start]
    while todo:
        n = todo.pop()
        for u in n.users:
            if u in seen or u in index or u.op == "output":
                continue
            if index_side and (n is start or n in index) and _integer(u) and not any(
                    v in seen and v is not start for v in u.all_input_nodes):
                index.add(u)
            else:
                seen.add(u)
            todo.append(u)
    return seen


def _integer(node: fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and not (val.is_floating_point() or val.is_complex())


def _upstream(starts: list[fx.Node], within: set[fx.Node]) -> set[fx.Node]:
    seen = set(starts)
    todo = list(starts)
    while todo:
        for u in todo.pop().all_input_nodes:
            if u in within and u not in seen:
                seen.add(u)
                todo.append(u)
    return seen


def _params_read(path: list[fx.Node], cap: Capture) -> dict[fx.Node, frozenset[fx.Node]]:
    """Per path node, the parameter placeholders it reads directly or through side nodes."""
    memo: dict[fx.Node, frozenset[fx.Node]] = {}

    def side_params(n: fx.Node) -> frozenset[fx.Node]:
        got = memo.get(n)
        if got is not None:
            return got
        spec = cap.inputs.get(n)
        if spec is not None:
            got = frozenset([n]) if spec.kind == "parameter" else frozenset()
        else:
            got = frozenset().union(*(side_params(u) for u in n.all_input_nodes
                                      if u not in main))
        memo[n] = got
        return got

    main = set(path)
    return {n: frozenset().union(*(side_params(u) for u in n.all_input_nodes if u not in main))
            for n in path}
