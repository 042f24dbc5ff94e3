"""The large benchmark's report: the table, the figures against issue 36's targets, and the
frontier picture (bench/large/main.py)."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

GiB = 2**30
MiB = 2**20
TITAN = ("no checkpointing", "torchtitan full", "torchtitan op", "torchtitan layer")
FUSED = ", fused head"  # the family (and name) suffix of an alternative given the fused head
SLOW = 1.25  # "within 1.25x the no-checkpointing step"


def size(n: float) -> str:
    """``n`` bytes in GiB, or in MiB below one GiB (the CPU check's tiny model)."""
    return f"{n / GiB:.2f} GiB" if n >= GiB else f"{n / MiB:.1f} MiB"


def _best(rows: list[dict[str, Any]], families: tuple[str, ...], peak: float
          ) -> dict[str, Any] | None:
    """The row of ``families`` with the most tokens per second within ``peak`` (+0.1 %)."""
    fits = [r for r in rows if r.get("family") in families and r["peak"] <= peak * 1.001]
    return max(fits, key=lambda r: r["tokens_s"]) if fits else None


def _geomean(xs: list[float]) -> float:
    return statistics.geometric_mean(xs) if xs else math.nan


def render(rows: list[dict[str, Any]], prof: dict[str, Any], header: str,
           out: Path | None) -> str:
    """The report's Markdown (module docstring); with ``out`` the frontier is drawn beside
    it."""
    ran = [r for r in rows if "peak" in r]
    plain = next((r for r in ran if r["family"] == "no checkpointing"), None)
    unit, scale = ("GiB", GiB) if any(r["peak"] >= GiB for r in ran) else ("MiB", MiB)
    lines = ["# chainplan against torchtitan's activation checkpointing, one device", "",
             header, "",
             f"A Llama-style decoder (bench/large/model.py) of {prof['params'] / 1e9:.2f} billion "
             f"parameters, sequence {prof['seq']}, micro-batch {prof['batch']}, AdamW; "
             f"chainplan's chain has {prof['stages']} stages. Activation peak: one "
             "step's, parameters, gradients and optimizer state excluded (chainplan.measure; "
             "what chainplan's budgets count); total peak: max_memory_allocated over the "
             "timed steps (CUDA only).", "",
             f"| variant | activation peak {unit} | total peak {unit} | tokens/s | step s "
             "| time / no checkpointing |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "peak" not in r:
            lines.append(f"| {r['name']} | {r['error']} | | | | |")
            continue
        rel = r["step_s"] / plain["step_s"] if plain else math.nan
        total = f"{r['total_peak'] / scale:.2f}" if r["total_peak"] else "n/a"
        lines.append(f"| {r['name']} | {r['peak'] / scale:.2f} | {total} | "
                     f"{r['tokens_s']:.0f} | {r['step_s']:.3f} | {rel:.3f} |")
    lines += ["", "## Against the targets", ""]
    ours = [r for r in ran if r["family"] == "chainplan"]
    alts = [r for r in ran if r["family"] not in ("no checkpointing", "chainplan",
                                                   "chainplan + compile")]
    fused = tuple(sorted({r["family"] for r in ran if r["family"].endswith(FUSED)}))
    gains, gains_titan, gains_fused = [], [], []
    for a in alts:
        c = _best(ours, ("chainplan",), a["peak"])
        if c is None:
            continue
        gains.append(c["tokens_s"] / a["tokens_s"])
        t = _best(ran, TITAN, a["peak"])
        if t is not None:
            gains_titan.append(c["tokens_s"] / t["tokens_s"])
        f = _best(ran, fused, a["peak"])
        if f is not None:
            gains_fused.append(c["tokens_s"] / f["tokens_s"])
    lines.append(f"* **Equal measured memory.** At each alternative's activation peak, "
                 f"chainplan's fastest plan within it against torchtitan's fastest mode within "
                 f"it (PyTorch's head and loss): tokens/s ratio geometric mean "
                 f"{_geomean(gains_titan):.3f} over {len(gains_titan)} budgets (target at "
                 f"least 1.10); against the fastest alternative given the fused head within it "
                 f"{_geomean(gains_fused):.3f} over {len(gains_fused)} budgets (target at "
                 f"least 1.05); against the alternative itself {_geomean(gains):.3f}.")
    if plain:
        fast = [r for r in ours if r["step_s"] <= SLOW * plain["step_s"]]
        full = next((r for r in ran if r["family"] == "torchtitan full"), None)
        if fast and full:
            small = min(fast, key=lambda r: r["peak"])
            lines.append(f"* **Smallest peak within {SLOW}x the no-checkpointing step.** "
                         f"chainplan {size(small['peak'])} "
                         f"({small['step_s'] / plain['step_s']:.2f}x), full per-block "
                         f"{size(full['peak'])}: {small['peak'] / full['peak']:.2f} "
                         "(target at most 0.6).")
    comp = [r for r in ran if r["family"] == "torch.compile"]
    cp = [r for r in ran if r["family"] == "chainplan + compile"]
    if comp:
        below = sum(1 for c in comp if any(v["peak"] <= c["peak"] and v["step_s"] <= c["step_s"]
                                           for v in cp))
        lines.append(f"* **Compiled.** chainplan + compile has a point at no more memory and no "
                     f"more time than {below} of torch.compile's {len(comp)} points.")
    if out is not None and ran and plain:
        lines += ["", f"![frontier]({_draw(ran, plain, out)})"]
    return "\n".join(lines) + "\n"


def _draw(ran: list[dict[str, Any]], plain: dict[str, Any], out: Path) -> str:
    """The frontier (activation peak against step time / no checkpointing), drawn by
    ``go run ./bench/promise/frontier``; its points are kept beside the report."""
    series: dict[str, list[list[float]]] = {}
    for r in ran:
        series.setdefault(r["family"], []).append([r["peak"], r["step_s"] / plain["step_s"]])
    points = out.with_name(out.stem + "-points.json")
    points.write_text(json.dumps({"panels": [{"title": "bench/large", "series": series}]}))
    picture = out.with_name(out.stem + "-frontier.svg")
    root = Path(__file__).resolve().parents[2]
    if shutil.which("go") is None:
        print(f"bench/large: no go on PATH, {picture} not drawn (points in {points}: "
              f"go run ./bench/promise/frontier -in {points} -o {picture})", file=sys.stderr)
    else:
        subprocess.run(["go", "run", "./bench/promise/frontier", "-in", str(points.resolve()),
                        "-o", str(picture.resolve())], check=True, cwd=root)
    return picture.name
