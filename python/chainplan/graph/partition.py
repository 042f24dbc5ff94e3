"""Turning chosen boundaries into stages: which nodes each stage runs, what it reads, and
which side nodes are computed once per step (the prelude).

Path nodes go to the stage between the boundaries around them. Side nodes (those that do
not depend on a_0, :mod:`chainplan.graph.analysis`) are placed by who reads them:

* a side node read (directly or through other side nodes) by **two stages or more** that
  makes memory (a mask built with ``torch.triu``, a timestep embedding) goes to the
  **prelude**: it is computed once per step, held until the step's backward is done, and
  handed to the stages that read it as a **side value**, never recomputed or stored per
  stage. So does every side node it needs;
* a view (slicing a rotary table or a mask buffer) costs nothing: it is repeated in every
  stage that reads it;
* a side node read by **one stage** only (position ids, a class token expanded to the
  batch) is computed inside that stage, so it is recomputed with it and costs no memory
  between steps;
* a side node that updates a buffer and is read by nobody (BatchNorm's
  ``num_batches_tracked += 1``) runs in the stage of the next path node, its module's.

The **epilogue** (what ``forward`` computes after the chain's end: a loss from ``labels=``,
the output object) counts as one more reader: a side value it shares with a stage goes to
the prelude, one only it reads is computed in it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from torch import fx

from chainplan.graph.aliasing import writes
from chainplan.graph.analysis import ChainGraph, is_view

__all__ = ["Part", "Partition", "partition"]


@dataclass(frozen=True)
class Part:
    """One stage of the split.

    Attributes:
        input: the node whose value the stage receives (a_0's placeholder for stage 1).
        output: the boundary node whose value the stage returns.
        nodes: the nodes the stage runs, in graph order (path nodes and its side nodes).
        reads: what the stage reads besides its input, in graph order: placeholders
            (parameters, buffers, constants, side arguments) and prelude nodes.
        path: the path nodes among ``nodes``.
    """

    input: fx.Node
    output: fx.Node
    nodes: tuple[fx.Node, ...]
    reads: tuple[fx.Node, ...]
    path: tuple[fx.Node, ...]


@dataclass(frozen=True)
class Partition:
    """Stages and prelude of a split.

    Attributes:
        parts: the stages, in order.
        prelude: the side nodes computed once per step, in graph order.
        prelude_reads: the placeholders the prelude reads.
        side_values: the prelude nodes and side-argument placeholders the stages (and the
            epilogue) read.
        epilogue: what runs after the chain's end (its input is the end), or None when
            ``forward`` returns the end alone.
    """

    parts: tuple[Part, ...]
    prelude: tuple[fx.Node, ...]
    prelude_reads: tuple[fx.Node, ...]
    side_values: tuple[fx.Node, ...]
    epilogue: Part | None = None


def partition(g: ChainGraph, bounds: list[int]) -> Partition:
    """Place every node of ``g`` in a stage or the prelude (module docstring)."""
    stage_of: dict[fx.Node, int] = {}
    starts = [0, *bounds[:-1]]
    ends = [*bounds[:-1], len(g.path) - 1]  # nodes after the output stay in the last stage
    for s, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        for n in g.path[lo + 1:hi + 1]:
            stage_of[n] = s
    after = len(bounds)  # the epilogue's index among the readers
    for n in g.epilogue:
        stage_of[n] = after
    order = list(g.pos)
    side = [n for n in order if n.op in ("call_function", "get_attr") and n not in g.main]
    need: dict[fx.Node, set[int]] = {}
    for n in reversed(side):
        got: set[int] = set()
        for u in n.users:
            if u in stage_of:
                got.add(stage_of[u])
            elif u in need:
                got |= need[u]
        if not got and not n.users and (writes(n) or n.is_impure(impure_random=False)):
            got = {_next_stage(g, n, stage_of, len(bounds))}
        need[n] = got
    # A side value forward returns (an encoder-decoder's encoder_last_hidden_state) is
    # handed to the output object from the prelude, as the step computed it.
    returned = [r for r in g.capture.returns if isinstance(r, fx.Node) and r in need]
    seeds = [n for n in side if (len(need[n]) > 1 and not is_view(n)) or n in returned]
    prelude = _closure(seeds, lambda u: u in need)
    # The parts of a multi-output prelude node (torch.chunk) are the side values, not the
    # tuple: they are taken in the prelude too.
    prelude |= {n for n in side if n.target is operator.getitem and n.args[0] in prelude}
    def part(k: int, own: list[fx.Node], first: fx.Node, last: fx.Node) -> Part:
        roots = own + [n for n in side if not n.users and need[n] == {k} and n not in prelude]
        inline = _closure(roots, lambda u: u in need and u not in prelude) - set(own)
        nodes = sorted(set(own) | inline, key=g.pos.__getitem__)
        inside = set(nodes) | {first}
        reads = sorted({u for n in nodes for u in n.all_input_nodes if u not in inside},
                       key=g.pos.__getitem__)
        for u in reads:  # a side node may read a_0 (analyze's index_side), a path node not
            if (u.op != "placeholder" and u not in prelude) or (u is g.capture.main and any(
                    n in g.main and u in n.all_input_nodes for n in nodes)):
                what = f"stage {k + 1}" if k < after else "the epilogue"
                raise AssertionError(f"{what} reads {u.name} from another stage")
        return Part(first, last, tuple(nodes), tuple(reads), tuple(own))

    parts = [part(s, list(g.path[lo + 1:hi + 1]), g.path[lo], g.path[bounds[s]])
             for s, (lo, hi) in enumerate(zip(starts, ends, strict=True))]
    epilogue = None
    if g.epilogue:
        epilogue = part(after, sorted(g.epilogue, key=g.pos.__getitem__), g.end, g.end)
    pre = sorted(prelude, key=g.pos.__getitem__)
    pre_reads = sorted({u for n in pre for u in n.all_input_nodes if u.op == "placeholder"},
                       key=g.pos.__getitem__)
    readers = [*parts, *([epilogue] if epilogue is not None else [])]
    side_values = sorted({u for p in readers for u in p.reads
                          if u in prelude or g.capture.inputs[u].kind == "user"}
                         | set(returned),
                         key=g.pos.__getitem__)
    return Partition(tuple(parts), tuple(pre), tuple(pre_reads), tuple(side_values), epilogue)


def _next_stage(g: ChainGraph, n: fx.Node, stage_of: dict[fx.Node, int], count: int) -> int:
    """The stage of the first path node after ``n`` (the last stage if none)."""
    p = g.pos[n]
    later = [m for m in g.path[1:] if g.pos[m] > p]
    return stage_of[later[0]] if later else count - 1


def _closure(roots: list[fx.Node], accept: Callable[[fx.Node], bool]) -> set[fx.Node]:
    """The nodes ``accept`` takes among ``roots`` and the inputs reachable from ``roots``
    through accepted nodes."""
    seen = {r for r in roots if accept(r)}
    todo = list(roots)
    while todo:
        for u in todo.pop().all_input_nodes:
            if u not in seen and accept(u):
                seen.add(u)
                todo.append(u)
    return seen
