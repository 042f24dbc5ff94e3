"""An extracted chain: the stages of a model captured as a graph, ready to profile and run.

:func:`extract` captures the model (:mod:`~chainplan.graph.capture`), finds the cut points
(:mod:`~chainplan.graph.analysis`), chooses the boundaries (:mod:`~chainplan.graph.choose`),
places every node (:mod:`~chainplan.graph.partition`) and builds one
:class:`~chainplan.graph.stage.GraphStage` per stage plus the prelude that computes the
shared side values once per step. :meth:`ExtractedChain.bind` turns a call's arguments into
the chain input a_0 and the step's :class:`~chainplan.runtime.side.SideInputs`, and
:meth:`ExtractedChain.finish` turns the chain's end into what ``forward`` returns
(:mod:`~chainplan.graph.outputs`). Every call is first put in the form a training step
makes (:func:`~chainplan.graph.call.training_call`: keywords in signature order, no
generation cache).

A graph is specialized to the shapes, dtypes, non-tensor arguments and training mode it was
captured with (:meth:`ExtractedChain.matches`); the executors capture again for a new kind
of input, as they plan again.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Hashable
from typing import Any

import torch
from torch import fx, nn
from torch.utils import _pytree as pytree

from chainplan.errors import ChainplanWarning, ScheduleError
from chainplan.graph.analysis import ChainGraph, analyze, nbytes
from chainplan.graph.call import training_call
from chainplan.graph.capture import Capture, capture
from chainplan.graph.choose import MIN_STAGES, choose_boundaries
from chainplan.graph.cuts import jumps_over
from chainplan.graph.describe import ChainSplit, SideInfo, StageInfo
from chainplan.graph.outputs import Outputs
from chainplan.graph.partition import Partition, partition
from chainplan.graph.stage import (
    GraphStage,
    Reader,
    mutated_buffers,
    readers,
    run_graph,
    state_of,
)
from chainplan.graph.stageinfo import stage_info
from chainplan.runtime.side import SideInputs, SideSlot

__all__ = ["BranchWarning", "ExtractedChain", "args_key", "extract", "input_key"]

# A stage holding more than this share of the operations is reported with its branches.
_LARGE = 0.5


class BranchWarning(ChainplanWarning):
    """Branches (long skip connections) forced part of a model into one large stage."""


def input_key(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable:
    """What a captured graph is specialized to: the arguments (:func:`args_key`), the
    training mode and the autocast state."""
    key: list[Hashable] = [args_key(args, kwargs), model.training]
    for kind in ("cpu", "cuda"):
        if torch.is_autocast_enabled(kind):
            key.append((kind, torch.get_autocast_dtype(kind)))
    return tuple(key)


def args_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable:
    """The arguments' structure, every tensor's shape, dtype, device and whether it needs
    a gradient, and the other arguments' values."""
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    key: list[Hashable] = [str(spec)]
    for v in leaves:
        if isinstance(v, torch.Tensor):
            key.append((tuple(v.shape), v.dtype, v.device, v.requires_grad))
        else:
            try:
                hash(v)
                key.append((type(v), v))
            except TypeError:
                key.append((type(v), repr(v)))
    return tuple(key)


class ExtractedChain:
    """The stages of a model captured as a graph, and how to feed them (module docstring).

    Attributes:
        model: the model (its parameters and buffers are the stages' own).
        key: the kind of input the graph was captured for (:func:`input_key`).
        stages: the stages, in order.
        split: the description :func:`chainplan.stages` prints.
        slot: where the stages read the side values of the step being run.
        outputs: what ``forward`` returns around the chain's end, and the epilogue.
        eager_paths: whether the capture followed the model's eager branches
            (:mod:`chainplan.graph.capture`).
        logits_dropped: whether the logits of a language model's head were taken out of
            what ``forward`` returns, its head fused with its loss
            (:mod:`chainplan.graph.fuseloss`).
    """

    def __init__(self, model: nn.Module, key: Hashable, cap: Capture, g: ChainGraph,
                 part: Partition, level: int) -> None:
        self._model = weakref.ref(model)  # cached per model: must not keep it alive
        self.name = type(model).__name__
        self.key = key
        self.spec = cap.spec  # not the capture: its program holds the tensors of the time
        self.slot = SideSlot()
        side = frozenset(part.side_values)
        self.main_index = cap.inputs[cap.main].flat_index
        args = tuple(n for n in part.side_values if n.op == "placeholder")
        self.side_args = readers(args, cap, model, frozenset())
        self.prelude: fx.GraphModule | None = None
        self.prelude_reads: list[Reader] = []
        outs = [n for n in part.side_values if n.op != "placeholder"]
        self.prelude_names = [n.name for n in outs]
        if outs:
            self.prelude = run_graph(cap, part.prelude, list(part.prelude_reads), outs)
            self.prelude_reads = readers(part.prelude_reads, cap, model, frozenset())
        infos = [stage_info(k, p, g, tuple(n.name for n in p.reads if n in side))
                 for k, p in enumerate(part.parts, start=1)]
        self.stages = [
            GraphStage(run_graph(cap, p.nodes, [p.input, *p.reads], [p.output]),
                       readers(p.reads, cap, model, side), mutated_buffers(p.nodes, cap),
                       self.slot, info.name)
            for p, info in zip(part.parts, infos, strict=True)]
        sides = [SideInfo(n.name, tuple(n.meta["val"].shape), str(n.meta["val"].dtype),
                          nbytes(n), "argument" if n.op == "placeholder" else "computed")
                 for n in part.side_values]
        self.split = ChainSplit(type(model).__name__, tuple(infos), tuple(sides), level,
                                _branches(g, part, infos, type(model).__name__), "graph")
        self.outputs = Outputs(g, part, model, self.slot)
        self.eager_paths = cap.eager_paths
        self.logits_dropped = bool(cap.dropped)

    @property
    def model(self) -> nn.Module:
        """The model (ScheduleError once it no longer exists)."""
        model = self._model()
        if model is None:
            raise ScheduleError(f"the {self.name} model of this chain no longer exists")
        return model

    @property
    def names(self) -> list[str]:
        """The stage names (their module paths), in order."""
        return [s.name for s in self.split.stages]

    def matches(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether a call with these arguments fits the captured graph."""
        args, kwargs = training_call(self.model, args, kwargs)
        return input_key(self.model, args, kwargs) == self.key

    def finish(self, end: torch.Tensor) -> Any:
        """What ``forward`` returns for the chain's end ``end`` (run it with the step's side
        values in scope: the epilogue may read them)."""
        return self.outputs.finish(end)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any], *,
             detach: bool = True) -> tuple[torch.Tensor, SideInputs]:
        """The chain input a_0 and the side values of a call; the prelude runs here, under
        the caller's grad mode. ``detach=False`` hands side values needing a gradient to
        the stages as they are, for running the stages one after the other under plain
        autograd (``chainplan.record``); the executors need them detached
        (:class:`~chainplan.runtime.side.SideInputs`).

        Raises:
            ScheduleError: the arguments are not of the kind the graph was captured for.
        """
        args, kwargs = training_call(self.model, args, kwargs)
        leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
        if spec != self.spec:
            raise ScheduleError(f"the chain of {self.name} was captured for "
                                f"arguments {self.spec}, not {spec}")
        values: dict[str, torch.Tensor] = {r.key: leaves[r.flat_index] for r in self.side_args}
        if self.prelude is not None:
            ins = [_fetch(r, leaves) for r in self.prelude_reads]
            outs = self.prelude(*ins)
            if len(self.prelude_names) == 1:
                outs = (outs,)
            values.update(zip(self.prelude_names, outs, strict=True))
        x = leaves[self.main_index]
        return x, SideInputs(self.slot, values, detach=detach)


def _fetch(r: Reader, leaves: list[Any]) -> Any:
    if r.kind == "state":
        return state_of(r)
    if r.kind == "user":
        return leaves[r.flat_index]
    return r.value


def extract(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], *,
            min_stages: int = MIN_STAGES, epilogue_share: float = 0.0,
            index_side: bool = False, keep_logits: bool = False) -> ExtractedChain:
    """Capture ``model`` on ``(args, kwargs)`` and split it into a chain (reused for the
    same model, module structure and kind of input: ``profile()`` and the executors of its
    plans share one capture).

    Args:
        model: any module; its first tensor argument (in the order of its signature) is
            the chain input, and it may return any structure holding the chain's end.
        args, kwargs: a sample call (put in the form of a training call,
            :func:`~chainplan.graph.call.training_call`).

    Keyword Args:
        min_stages: the fewest stages the module-level rule aims for (default: 4;
            :mod:`chainplan.graph.choose`).
        epilogue_share: the largest share of the model's parameters the code after the
            chain's end may read (default 0: none; :func:`~chainplan.graph.analysis.analyze`).
        index_side: integer values computed from a_0 are side values (``analyze``).
        keep_logits: return a language model's logits beside its loss (default: False:
            they are None and its head is fused with its loss; :func:`capture`).

    Raises:
        CaptureError: the model cannot be captured or cut (the message names the
            construct and the fallback).

    Warns:
        BranchWarning: a stage holds more than half of the model's operations because
            branches (long skip connections) span it; the message shows them.
    """
    args, kwargs = training_call(model, args, kwargs)
    key = input_key(model, args, kwargs)
    cached = _CACHE.setdefault(model, {})
    full = (key, _structure(model), min_stages, epilogue_share, index_side, keep_logits)
    chain = cached.get(full)
    if chain is not None:
        return chain
    cap = capture(model, args, kwargs, keep_logits=keep_logits)
    g = analyze(cap, epilogue_share=epilogue_share, index_side=index_side)
    bounds, level = choose_boundaries(g, min_stages)
    chain = ExtractedChain(model, key, cap, g, partition(g, bounds), level)
    for text in chain.split.branches:
        warnings.warn(text, BranchWarning, stacklevel=3)
    if len(cached) >= _CACHED_PER_MODEL:
        del cached[next(iter(cached))]
    cached[full] = chain
    return chain


# The splits made for each model, by kind of input and module structure: profile() and the
# executors of its plans share one capture. Weak keys: a chain does not keep its model alive.
_CACHE: weakref.WeakKeyDictionary[nn.Module, dict[Hashable, ExtractedChain]] = (
    weakref.WeakKeyDictionary())
_CACHED_PER_MODEL = 8


def _structure(model: nn.Module) -> Hashable:
    """The identity of every module, parameter and buffer of ``model``: a split is reused
    only while they are the same objects."""
    return (tuple(id(m) for m in model.modules()), tuple(id(p) for p in model.parameters()),
            tuple(id(b) for b in model.buffers()))


def _branches(g: ChainGraph, part: Partition, infos: list[StageInfo],
              model: str) -> tuple[str, ...]:
    """A message per stage holding more than half of the operations: the branches that
    keep it in one piece, longest first."""
    total = sum(i.ops for i in infos)
    out = []
    index = {n: i for i, n in enumerate(g.path)}
    for info, p in zip(infos, part.parts, strict=True):
        if total < 8 or info.ops <= _LARGE * total:
            continue
        edges = jumps_over(index[p.input], index[p.output], g.edges)[:3]
        ends = "; ".join(f"from {_where(g, g.path[u])} to {_where(g, g.path[w])}"
                         for u, w in edges)
        out.append(
            f"stage {info.index} of {len(infos)} ({info.name}) holds {info.ops} of the "
            f"{total} operations of {model}: "
            f"branches run across it ({ends}), and a chain cannot be cut between the two "
            "ends of a branch, so everything between them is one stage that is checkpointed "
            "whole")
    return tuple(out)


def _where(g: ChainGraph, n: fx.Node) -> str:
    """A node as a user sees it: its innermost module path and the node's name."""
    stack = g.stacks.get(n) or []
    return f"{stack[-1][1]} ({n.name})" if stack else f"forward ({n.name})"
