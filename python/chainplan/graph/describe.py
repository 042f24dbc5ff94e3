"""The description of a split, as :func:`chainplan.stages` returns and prints it.

Plain data, no torch: per stage its name, the module paths it covers, its operation count,
output and parameter sizes and the side values it reads; the side values; the module level
the boundaries were taken at; and what was merged because of branches.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainplan.profiler.summary import format_bytes

__all__ = ["ChainSplit", "SideInfo", "StageInfo"]


@dataclass(frozen=True)
class StageInfo:
    """One stage of a split.

    Attributes:
        index: 1-based position in the chain.
        name: the stage's name in profiles: ``path:Type`` for one whole module, else the
            module paths joined by ``+`` (:func:`chainplan.graph.stageinfo.stage_info`).
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
