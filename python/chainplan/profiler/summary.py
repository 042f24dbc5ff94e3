"""Readable text for profiles: sizes in IEC units, times with a unit, and the stage table
of a profile's rows.

The table shows each stage as the planner sees it: the rows of a stage are aggregated the
way the Go side aggregates them (profiler/aggregate.go): times are medians over the
repetitions, sizes are upper medians of the measured values (an observed size, erring on
the side of more memory). This module never imports torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from chainplan.profilerow import ProfileRow

__all__: list[str] = []

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_SIZES = ("out", "saved", "fwd_tmp", "bwd_tmp", "param")


def format_bytes(n: int | None) -> str:
    """A size in IEC units, as the CLI prints it (``512 B``, ``1.50 KiB``); ``-`` for None."""
    if n is None:
        return "-"
    v, i = float(n), 0
    while abs(v) >= 1024 and i < len(_UNITS) - 1:
        v /= 1024
        i += 1
    return f"{n} B" if i == 0 else f"{v:.2f} {_UNITS[i]}"


def format_seconds(s: float) -> str:
    """A time with a unit that reads well, as the CLI prints it (``3.2 ms``, ``4.71 s``,
    ``1.3 h``). Texts say why a time is missing before they format it; a NaN that reaches
    here anyway reads ``unknown``, never "nan ms"."""
    if math.isnan(s):
        return "unknown"
    if math.isinf(s):
        return "∞ s" if s > 0 else "-∞ s"
    if abs(s) >= 7200:
        return f"{s / 3600:.3g} h"
    if abs(s) >= 1:
        return f"{s:.4g} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.4g} ms"
    return f"{s * 1e6:.4g} µs"


@dataclass(frozen=True)
class _StageSummary:
    """The summary of one stage's (or the loss's) measurements: its rows aggregated."""

    index: int
    name: str
    kind: str
    in_bytes: int
    fwd_s: float
    bwd_s: float
    sizes: tuple[int | None, ...]  # in the order of _SIZES


def _upper_median(values: Sequence[int | None]) -> int | None:
    known = sorted(v for v in values if v is not None)
    return known[len(known) // 2] if known else None


def _aggregate(rows: Sequence[ProfileRow]) -> list[_StageSummary]:
    by_index: dict[int, list[ProfileRow]] = {}
    for r in rows:
        by_index.setdefault(r.stage_index, []).append(r)
    out = []
    for k in sorted(by_index):
        rs = by_index[k]
        sizes = tuple(_upper_median([getattr(r, f"{s}_bytes") for r in rs]) for s in _SIZES)
        out.append(_StageSummary(k, rs[0].stage_name, rs[0].stage_kind, rs[0].in_bytes,
                          statistics.median(r.fwd_time_s for r in rs),
                          statistics.median(r.bwd_time_s for r in rs), sizes))
    return out


def stage_table(rows: Sequence[ProfileRow]) -> str:
    """The stage table of a profile's rows, one line per stage, the loss, then the totals.

    Columns: the stage index (1-based, the loss L+1), its name (the module path and class),
    forward and backward times in milliseconds, and the out, saved, fwd_tmp, bwd_tmp and
    param sizes. The totals line adds the times of the stages and the loss (one training
    step without recomputation) and the saved and param sizes of the stages (the
    activations a store-all step keeps, and the weights); the other sizes do not add up.
    """
    stages = _aggregate(rows)
    width = max([len("stage"), *(len(_label(s)) for s in stages)])

    def line(index: str, name: str, fwd: str, bwd: str, sizes: Sequence[str]) -> str:
        return (f"{index:>4}  {name:<{width}}  {fwd:>9}  {bwd:>9}"
                + "".join(f"  {v:>10}" for v in sizes))

    lines = [line("#", "stage", "fwd ms", "bwd ms", _SIZES)]
    lines += [line(str(s.index), _label(s), f"{1e3 * s.fwd_s:.3f}", f"{1e3 * s.bwd_s:.3f}",
                   [format_bytes(v) for v in s.sizes]) for s in stages]
    body = [s for s in stages if s.kind != "loss"]
    saved = [s.sizes[1] for s in body]
    total_saved = None if None in saved else sum(v or 0 for v in saved)
    param = sum(s.sizes[4] or 0 for s in body)
    lines.append("-" * len(lines[0]))
    lines.append(line("", "total", f"{1e3 * sum(s.fwd_s for s in stages):.3f}",
                      f"{1e3 * sum(s.bwd_s for s in stages):.3f}",
                      ["", format_bytes(total_saved), "", "", format_bytes(param)]))
    return "\n".join(lines)


def _label(s: _StageSummary) -> str:
    return f"loss: {s.name}" if s.kind == "loss" else s.name
