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
    from chainplan.graph.analysis import ChainGraph
    from chainplan.graph.partition import Part

__all__ = ["ChainSplit", "SideInfo", "StageInfo", "stage_info"]


@dataclass(frozen=True)
class StageInfo:
    """One stage of a split.

    Attributes:
        index: 1-based position in the chain.
        name: the stage's name in profiles: ``path:Type`` for one whole module, else the
            module paths joined by ``+`` (``(part)`` marks a module split across stages).
        modules: the outermost module paths the stage runs (``"blocks.0"``,
            ``"blocks.1 (part)"``); empty for operations of the model's own forward.
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
    """Describe stage ``index`` (its part of the graph ``g``)."""
    from chainplan.graph.analysis import is_view, nbytes

    count: dict[str, int] = {}
    for n in g.path:
        for key, _, _ in g.stacks[n]:
            count[key] = count.get(key, 0) + 1
    outer: dict[str, tuple[str, str]] = {}
    mine: dict[str, int] = {}
    for n in part.path:
        stack = g.stacks[n]
        for key, _, _ in stack:
            mine[key] = mine.get(key, 0) + 1
        if stack:
            outer.setdefault(stack[0][0], (stack[0][1], stack[0][2]))
    modules: list[str] = []
    for key, (path, _) in outer.items():
        label = path if mine[key] == count[key] else f"{path} (part)"
        if label not in modules:
            modules.append(label)
    inner: list[str] = []  # one level down, for a stage holding part of one module
    if len(outer) == 1 and len(modules) == 1 and modules[0].endswith("(part)"):
        for n in part.path:
            stack = g.stacks[n]
            if len(stack) > 1 and stack[1][1] not in inner:
                inner.append(stack[1][1])
    if len(outer) == 1 and len(modules) == 1 and not modules[0].endswith("(part)"):
        path, kind = next(iter(outer.values()))
        name = f"{path}:{kind}"
    elif inner:
        name = "+".join(inner) if len(inner) <= 3 else f"{inner[0]}+...+{inner[-1]}"
    elif modules:
        name = "+".join(modules) if len(modules) <= 3 else f"{modules[0]}+...+{modules[-1]}"
    else:  # operations of the model's own forward: name them
        ops = [str(getattr(n.target, "_opname", n.name)) for n in part.path
               if n.op == "call_function" and not is_view(n)] or [part.output.name]
        name = "+".join(dict.fromkeys(ops[:3]))
    val = part.output.meta["val"]
    inputs = g.capture.inputs
    params = [n for n in part.reads if n in inputs and inputs[n].kind == "parameter"]
    return StageInfo(index, name, tuple(modules),
                     sum(1 for n in part.path if n.op == "call_function" and not is_view(n)),
                     tuple(int(d) for d in val.shape), str(val.dtype), nbytes(part.output),
                     sum(nbytes(p) for p in params), reads)
