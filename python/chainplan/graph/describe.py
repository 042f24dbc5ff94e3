"""The description of a split, as :func:`chainplan.stages` returns and prints it.

Plain data, no torch: per stage its name, the module paths it covers, its operation count,
output and parameter sizes and the side values it reads; the side values; the module level
the boundaries were taken at; and what was merged because of branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chainplan.profiler.summary import format_bytes

if TYPE_CHECKING:
    from torch import fx

    from chainplan.graph.analysis import ChainGraph
    from chainplan.graph.partition import Part

__all__ = ["ChainSplit", "SideInfo", "StageInfo", "stage_info"]


@dataclass(frozen=True)
class StageInfo:
    """One stage of a split.

    Attributes:
        index: 1-based position in the chain.
        name: the stage's name in profiles: ``path:Type`` for one whole module, else the
            module paths joined by ``+`` (:func:`stage_info`).
        modules: the outermost module paths the stage runs whole (``"blocks.0"``), then
            the modules it runs operations of without running them whole
            (``"blocks.1 (part)"``); empty for operations of the model's own forward.
        ops: operations that make memory (views left out); 0 for declared stages, whose
            operations are not traced.
        out_shape, out_dtype, out_bytes: the stage output a_k.
        param_bytes: the parameters it reads (bytes).
        reads: the side values it reads, by name.
    """

    index: int
    name: str
    modules: tuple[str, ...]
    ops: int
    out_shape: tuple[int, ...]
    out_dtype: str
    out_bytes: int
    param_bytes: int
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class SideInfo:
    """A side value: read by stages, produced by none.

    Attributes:
        name: the argument's name, or the node computing it.
        shape, dtype, nbytes: its tensor.
        origin: ``"argument"`` (passed to forward) or ``"computed"`` (once per step, by the
            prelude).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    origin: str


@dataclass(frozen=True)
class ChainSplit:
    """How a model is cut into a chain (:func:`chainplan.stages`); ``str()`` is a table.

    Attributes:
        model: the model's class name.
        stages: the stages, in order.
        side: the side values.
        level: the module level the boundaries were taken at (``chainplan.graph.choose``).
        branches: one message per stage that branches forced to be large.
        source: ``"sequential"`` (declared stages) or ``"graph"`` (extracted).
    """

    model: str
    stages: tuple[StageInfo, ...]
    side: tuple[SideInfo, ...]
    level: int
    branches: tuple[str, ...]
    source: str

    @property
    def names(self) -> list[str]:
        """The stage names, in order."""
        return [s.name for s in self.stages]

    def __str__(self) -> str:
        how = ("declared as nn.Sequential" if self.source == "sequential"
               else f"extracted from its graph at module level {self.level}")
        n = len(self.stages)
        lines = [f"{self.model}: {n} stage{'' if n == 1 else 's'}, {how}"]
        width = max([5, *(len(s.name) for s in self.stages)])
        lines.append(f"{'#':>4}  {'stage':<{width}}  {'ops':>5}  {'output':<24}  "
                     f"{'out':>10}  {'param':>10}  side values read")
        for s in self.stages:
            out = f"{s.out_dtype.removeprefix('torch.')} {list(s.out_shape)}"
            ops = "-" if self.source == "sequential" else str(s.ops)  # not traced
            lines.append(f"{s.index:>4}  {s.name:<{width}}  {ops:>5}  {out:<24}  "
                         f"{format_bytes(s.out_bytes):>10}  {format_bytes(s.param_bytes):>10}"
                         f"  {', '.join(s.reads) or '-'}")
        for v in self.side:
            lines.append(f"side value {v.name} ({v.origin}): {v.dtype.removeprefix('torch.')} "
                         f"{list(v.shape)}, {format_bytes(v.nbytes)}, held once per step")
        lines.extend(f"note: {b}" for b in self.branches)
        return "\n".join(lines)


def stage_info(index: int, part: Part, g: ChainGraph, reads: tuple[str, ...]) -> StageInfo:
    """Describe stage ``index`` (its part of the graph ``g``).

    The stage is named after the outermost module calls it runs whole: the deepest ones
    that still cover its operations, so that a stage cut from a model wrapping its layers
    in one module (``model.layers`` inside ``LlamaForCausalLM.model``) is named
    ``model.layers.3:LlamaDecoderLayer``, not ``model (part)``. Operations of the model's
    own ``forward`` are named by their operation (``cat``, ``add``); operations of a
    module the stage does not run whole (a residual addition of a block split across
    stages) are listed as ``path (part)`` among the modules, and name the stage only when
    nothing else does. Side computations the stage makes itself (a position embedding)
    count as its own.
    """
    from chainplan.graph.analysis import is_view, nbytes

    def counted(n: fx.Node) -> bool:
        return n.op == "call_function" and not is_view(n)

    count: dict[str, int] = {}
    for n in g.pos:
        if counted(n):
            for key, _, _ in g.stacks[n]:
                count[key] = count.get(key, 0) + 1
    mine: dict[str, int] = {}
    for n in part.nodes:
        if counted(n):
            for key, _, _ in g.stacks[n]:
                mine[key] = mine.get(key, 0) + 1
    own = set(part.path)
    labels: list[str] = []  # whole module calls and the model's own operations, in order
    whole: dict[str, tuple[str, str]] = {}  # call key -> (path, type)
    partial: list[str] = []
    for n in part.nodes:
        if not counted(n):
            continue
        stack = g.stacks[n]
        call = next(((key, path, kind) for key, path, kind in stack
                     if mine.get(key) == count[key]), None)
        if call is not None:
            whole.setdefault(call[0], (call[1], call[2]))
            label = call[1]
        elif stack:
            label = ""
            if f"{stack[-1][1]} (part)" not in partial:
                partial.append(f"{stack[-1][1]} (part)")
        elif n in own:  # an operation of the model's own forward on the chain's path
            label = str(getattr(n.target, "_opname", n.name))
        else:
            label = ""
        if label and label not in labels:
            labels.append(label)
    modules = tuple(dict.fromkeys([path for path, _ in whole.values()] + partial))
    if len(whole) == 1 and len(labels) == 1 and not partial:
        path, kind = next(iter(whole.values()))
        name = f"{path}:{kind}"
    else:
        shown = labels or partial or [part.output.name]
        name = "+".join(shown) if len(shown) <= 4 else f"{shown[0]}+...+{shown[-1]}"
    val = part.output.meta["val"]
    inputs = g.capture.inputs
    params = [n for n in part.reads if n in inputs and inputs[n].kind == "parameter"]
    return StageInfo(index, name, modules,
                     sum(1 for n in part.path if n.op == "call_function" and not is_view(n)),
                     tuple(int(d) for d in val.shape), str(val.dtype), nbytes(part.output),
                     sum(nbytes(p) for p in params), reads)
