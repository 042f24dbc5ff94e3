"""The promise benchmark's figures: per-model tables, the targets of issue 19, the frontier.

Comparisons are made the way a user reads them: chainplan given an alternative's measured
peak as its budget, against the fastest alternative whose measured peak is at most
chainplan's measured peak; the smallest measured peak each system reaches within 1.25x the
plain step; chainplan's prediction against its measurement.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MiB = 2**20
EAGER = ("checkpoint_sequential", "per-block", "per-block SAC")
SLOW = 1.25  # "within 1.25x the plain step time"
# chainplan on the model with its loss computed outside it, as the script wrote it: the
# loss and the head are then beyond the plan (bench/promise/main.py, WithLoss).
OUTSIDE = "chainplan, loss outside"
# An alternative run with chainplan's fused linear cross-entropy in place of the model's
# head and PyTorch's loss (bench/promise/systems.py, fused_head): its family is the
# alternative's with this suffix.
FUSED = ", fused head"


@dataclass
class Variant:
    """One way of training the model: its measured peak, step times and, for chainplan,
    its plan's budget and predicted peak."""

    name: str
    family: str
    net: Any
    peak: int = 0
    times: list[float] = field(default_factory=list)
    budget: int = 0
    predicted: int = 0
    plan: Any = None
    note: str = ""
    ratio: float = 0.0  # time / plain, for rows measured in another process
    labels: list[str] = field(default_factory=list)
    own_loss: bool = False  # the net computes the loss itself: net(..., labels=target)

    @property
    def ms(self) -> float:
        return statistics.median(self.times) * 1e3 if self.times else math.nan


@dataclass
class Result:
    name: str
    case: Any
    prof: Any
    alts: list[Variant]
    ours: list[Variant]
    compiled: list[Variant] = field(default_factory=list)

    @property
    def plain(self) -> Variant:
        return self.alts[0]

    def rel(self, v: Variant) -> float:
        return v.ratio if v.ratio else v.ms / self.plain.ms

    def ran(self) -> list[Variant]:
        return [v for v in self.ours if v.net is not None]

    def at(self, alt: Variant) -> Variant | None:
        """chainplan's variant planned at ``alt``'s measured peak."""
        label = f"chainplan @ {alt.name}"
        return next((v for v in self.ours if v.name == label or label in v.labels), None)

    def comparisons(self) -> list[tuple[Variant, Variant, Variant, float]]:
        """(alternative, chainplan at its peak, fastest alternative with PyTorch's head
        within that memory, chainplan's time / that one's). The memory is the larger of the
        alternative's measured peak (chainplan's budget) and chainplan's: chainplan is never
        credited with memory it took beyond its budget, nor charged for memory it left
        unused."""
        return [(a, c, b, r) for a, c, b, r, _, _ in self.comparisons2() if b is not None]

    def comparisons2(self) -> list[tuple[Variant, Variant, Variant | None, float,
                                         Variant | None, float]]:
        """:meth:`comparisons` at every alternative's peak (the fused ones' too), each with
        the fastest alternative given the fused head (systems.fused_head) within the same
        memory and chainplan's time / its; None and nan where no alternative of that kind
        fits."""
        out = []
        for a in self.alts[1:]:
            c = self.at(a)
            if c is None or c.net is None:
                continue
            room = max(c.peak, a.peak) * 1.001
            fits = [b for b in self.alts if b.peak <= room and not b.family.endswith(FUSED)]
            best = min(fits, key=lambda b: b.ms) if fits else None
            fused = [b for b in self.alts if b.peak <= room and b.family.endswith(FUSED)]
            bf = min(fused, key=lambda b: b.ms) if fused else None
            if best is None and bf is None:
                continue
            out.append((a, c, best, c.ms / best.ms if best else math.nan, bf,
                        c.ms / bf.ms if bf else math.nan))
        return out

    def smallest_within(self, family: str) -> Variant | None:
        pool = ([v for v in self.ran() if v.family == family] if family.startswith("chainplan")
                and "compile" not in family else
                [v for v in self.compiled if v.family == family] if "compile" in family else
                [v for v in self.alts if v.family == family])
        fast = [v for v in pool if self.rel(v) <= SLOW]
        return min(fast, key=lambda v: v.peak) if fast else None


def _mib(b: float) -> str:
    return f"{b / MiB:.1f}"


def report_model(r: Result) -> str:
    """A model's tables (markdown)."""
    n = r.prof.num_stages
    params = sum(p.numel() for p in r.case.model.parameters())
    lines = [f"## {r.name} ({n} stages, {params:,} parameters)", "",
             "| variant | budget MiB | predicted MiB | measured peak MiB | step ms "
             "| time / plain |",
             "|---|---|---|---|---|---|"]
    for v in r.alts + r.ours:
        if v.net is None:
            lines.append(f"| {v.name} | {_mib(v.budget)} | | {v.note} | | |")
            continue
        names = ", ".join([v.name, *v.labels])
        budget = _mib(v.budget) if v.budget else ""
        pred = _mib(v.predicted) if v.predicted else ""
        lines.append(f"| {names} | {budget} | {pred} | {_mib(v.peak)} | {v.ms:.1f} | "
                     f"{r.rel(v):.3f} |")
    for v in r.compiled:
        lines.append(f"| {v.name} | {_mib(v.budget) if v.budget else ''} | | {_mib(v.peak)} | "
                     f"| {v.ratio:.3f} |")
    lines += ["", "Each alternative's measured peak given to chainplan as its budget, against the "
              "fastest alternative within that memory with PyTorch's head and loss, and the "
              "fastest with the fused head (chainplan's linear_cross_entropy, no plan):", "",
              "| alternative | its peak MiB | chainplan peak MiB | chainplan / plain | "
              "fastest alternative, PyTorch head | its / plain | chainplan / it "
              "| fastest alternative, fused head | its / plain | chainplan / it |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for a, c, best, ratio, bf, rf in r.comparisons2():
        lines.append(f"| {a.name} | {_mib(a.peak)} | {_mib(c.peak)} | {r.rel(c):.3f} | "
                     f"{_against(r, best, ratio)} | {_against(r, bf, rf)} |")
    lines += ["", "Smallest measured peak within 1.25x the plain step: " + "; ".join(
        f"{fam} {_mib(v.peak)} MiB ({r.rel(v):.2f}x)" if (v := r.smallest_within(fam)) else
        f"{fam} none" for fam in ("chainplan", OUTSIDE, *_families(r), "torch.compile",
                                  "torch.compile" + FUSED, "chainplan + compile")),
        ""]
    return "\n".join(lines) + "\n"


def _against(r: Result, best: Variant | None, ratio: float) -> str:
    """Three cells: the fastest alternative within the memory, its time / plain, and
    chainplan's / its ("none" when no alternative of that kind fits)."""
    if best is None:
        return "none | | "
    return f"{best.name} ({_mib(best.peak)} MiB) | {r.rel(best):.3f} | {ratio:.3f}"


def _families(r: Result) -> list[str]:
    """The eager alternatives' families, then, on a model with a head, the same fused."""
    if not r.case.head:
        return list(EAGER)
    return [*EAGER, "plain" + FUSED, *(f + FUSED for f in EAGER)]


def _geomean(xs: list[float]) -> float:
    return statistics.geometric_mean(xs) if xs else math.nan


def summarize(results: list[Result], header: str, rounds: int, picture: Path | None) -> str:
    """The figures against each target of issue 19, and the frontier picture."""
    ratios = [c[3] for r in results for c in r.comparisons()]
    lines = ["# chainplan against PyTorch's own checkpointing and torch.compile", "", header, "",
             "Peaks are the measured activation memory of one training step (parameters, "
             "gradients and optimizer state excluded, the input included); times are medians "
             f"over {rounds} alternating rounds, compared as ratios to the plain step of the "
             "same process. The machine may have been shared: ratios, not milliseconds, "
             "carry the comparison.", "", "## Against the targets", "",
             f"* **Equal measured memory.** chainplan at each alternative's measured peak, "
             f"against the fastest alternative (checkpoint_sequential or grouped blocks, "
             f"per-block checkpointing, per-block SAC, plain) within that memory (the larger of "
             f"the two measured peaks): "
             f"time ratio geometric mean {_geomean(ratios):.3f}, worst "
             f"{max(ratios, default=math.nan):.3f} over {len(ratios)} budgets "
             "(target: at most 0.926, i.e. 8 % faster, and never above 1.03)."]
    for r in results:
        rs = [c[3] for c in r.comparisons()]
        lines.append(f"  * {r.name}: geometric mean {_geomean(rs):.3f}, worst "
                     f"{max(rs, default=math.nan):.3f}")
    fused = [c for r in results for c in r.comparisons2() if c[4] is not None]
    if fused:
        lines.append("* **Equal measured memory, the alternatives given the fused head** "
                     "(the same alternatives, each with chainplan's linear_cross_entropy in "
                     "place of the model's head and PyTorch's loss, no plan): what the plan "
                     "adds beyond the fused head. chainplan / fastest fused alternative "
                     "within that memory, and / fastest alternative with either head:")
        for r in results:
            cs = [c for c in r.comparisons2() if c[4] is not None]
            if not cs:
                continue
            rf = [c[5] for c in cs]
            either = [c[1].ms / min(b.ms for b in (c[2], c[4]) if b is not None) for c in cs]
            lines.append(f"  * {r.name}: fused head geometric mean {_geomean(rf):.3f}, worst "
                         f"{max(rf):.3f}; either head geometric mean {_geomean(either):.3f}, "
                         f"worst {max(either):.3f} over {len(cs)} budgets")
    lines.append("* **Smallest peak within 1.25x the plain step** (chainplan / best eager "
                 "alternative; target at most 0.8 on the transformer models):")
    for r in results:
        ours = r.smallest_within("chainplan")
        eager = [v for fam in _families(r) if (v := r.smallest_within(fam))]
        best = min(eager, key=lambda v: v.peak) if eager else None
        if ours and best:
            lines.append(f"  * {r.name}: chainplan {_mib(ours.peak)} MiB ({r.rel(ours):.2f}x), "
                         f"{best.name} {_mib(best.peak)} MiB ({r.rel(best):.2f}x): "
                         f"{ours.peak / best.peak:.2f}")
    checks = [(r, v) for r in results for v in r.ran()]
    within = sum(1 for _, v in checks if v.peak <= 1.02 * v.budget)
    off = [abs(v.peak - v.predicted) / v.predicted for _, v in checks if v.predicted]
    lines.append(f"* **Predictions.** {within} of {len(checks)} chainplan plans measured within "
                 f"their budget (+2 %); measured against predicted peak: median "
                 f"{100 * statistics.median(off) if off else math.nan:.1f} %, worst "
                 f"{100 * max(off, default=math.nan):.1f} % (target: within 5 %).")
    for r in results:
        comp = [v for v in r.compiled if v.family.startswith("torch.compile")]
        if not comp:
            continue
        small = min(v.peak for v in comp)
        ours = min(v.peak for v in r.ran() if v.family == "chainplan")
        lines.append(f"* **torch.compile on {r.name}**: its smallest measured peak "
                     f"{_mib(small)} MiB; eager chainplan's smallest {_mib(ours)} MiB.")
        cp = [v for v in r.compiled if v.family == "chainplan + compile"]
        below = sum(1 for c in comp if any(v.peak <= c.peak and v.ratio <= c.ratio for v in cp))
        lines.append(f"  chainplan + compile has a point at no more memory and no more time "
                     f"than {below} of compile's {len(comp)} points.")
    if picture is not None:
        _draw(results, picture)
        lines += ["", f"![frontier]({picture.name})", ""]
    return "\n".join(lines) + "\n\n"


def _draw(results: list[Result], picture: Path) -> None:
    """The frontier of every system on every model (memory against time / plain), drawn
    by the Go side's internal/plot (``go run ./bench/promise/frontier``)."""
    panels = []
    for r in results:
        series: dict[str, list[list[float]]] = {}
        for v in r.alts + r.ran() + r.compiled:
            if v.peak:
                series.setdefault(v.family, []).append([v.peak, r.rel(v)])
        panels.append({"title": r.name, "series": series})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"panels": panels}, f)
    root = Path(__file__).resolve().parents[2]
    if shutil.which("go") is None:  # a lent GPU machine has no Go: the tables are the report
        print(f"bench/promise: no go on PATH, {picture} not drawn (data in {f.name})",
              file=sys.stderr)
        return
    subprocess.run(["go", "run", "./bench/promise/frontier", "-in", f.name, "-o", str(picture)],
                   check=True, cwd=root)
