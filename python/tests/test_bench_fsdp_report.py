"""bench/fsdp/report.py on a fixture of two ranks' reports: which figures the benchmark
compares (no timing is measured here)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

MiB = 2**20


@pytest.fixture(scope="module")
def report() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "fsdp" / "report.py"
    spec = importlib.util.spec_from_file_location("bench_fsdp_report", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _v(name: str, family: str, peak: int, times: list[float], **info: Any) -> dict[str, Any]:
    return {"name": name, "family": family, "peak": peak, "times": times, **info}


def _ranks() -> list[dict[str, Any]]:
    """Rank 1 is the slower and holds more of the per-block run; chainplan's plan at
    per-block's peak measured 1 MiB above it on rank 0, within its plan."""
    r0 = [_v("FSDP2", "plain", 30 * MiB, [1.0, 1.0, 1.0]),
          _v("FSDP2 + per-block AC", "per-block", 20 * MiB, [1.2, 1.3, 1.2]),
          _v("FSDP2 + per-op SAC", "sac", 25 * MiB, [1.1, 1.1, 1.1]),
          _v("chainplan @ FSDP2 + per-block AC", "chainplan", 22 * MiB, [1.0, 1.05, 1.1],
             target=21 * MiB, planned=23 * MiB, labels=["chainplan sweep 1"]),
          _v("chainplan @ FSDP2 + per-op SAC", "chainplan", 23 * MiB, [1.0, 1.0, 1.0],
             target=25 * MiB, planned=24 * MiB, labels=[]),
          _v("chainplan sweep 0", "chainplan", 18 * MiB, [1.5, 1.5, 1.5], target=0,
             planned=17 * MiB, labels=[]),
          _v("chainplan @ FSDP2 + per-block AC, fixed part measured", "chainplan", 0, [],
             infeasible=True, target=10 * MiB, min_bytes=15 * MiB)]
    r1 = [dict(v) for v in r0]
    r1[0] = _v("FSDP2", "plain", 29 * MiB, [2.0, 2.0, 2.0])  # the slowest rank sets the time
    r1[1] = _v("FSDP2 + per-block AC", "per-block", 21 * MiB, [2.6, 2.4, 2.4])
    r1[2] = _v("FSDP2 + per-op SAC", "sac", 24 * MiB, [2.2, 2.2, 2.2])
    r1[3] = dict(r0[3], peak=20 * MiB, times=[2.0, 2.1, 2.2])
    r1[4] = dict(r0[4], times=[2.0, 2.0, 2.0])
    r1[5] = dict(r0[5], times=[3.0, 3.0, 3.0])
    return [{"setup_s": 1.0, "variants": r0}, {"setup_s": 1.0, "variants": r1}]


def test_rows_take_the_largest_peak_and_the_slowest_rank(report: ModuleType) -> None:
    rows = {r.name: r for r in report.rows_of(_ranks(), "main")}
    pb = rows["FSDP2 + per-block AC"]
    assert pb.peak == 21 * MiB and pb.peaks == [20 * MiB, 21 * MiB]
    assert pb.ms == pytest.approx(2400.0) and pb.rel == pytest.approx(1.2)
    assert rows["chainplan @ FSDP2 + per-block AC"].rel == pytest.approx(1.05)
    off = rows["chainplan @ FSDP2 + per-block AC, fixed part measured"]
    assert not off.ran and "15.00 MiB" in off.note and math.isnan(off.rel)


def test_within_plan_is_checked_on_every_rank(report: ModuleType) -> None:
    rows = {r.name: r for r in report.rows_of(_ranks(), "main")}
    assert rows["chainplan @ FSDP2 + per-block AC"].within_plan()
    # 18 MiB measured against 17 planned: 5.9 % over, beyond the 2 % tolerance.
    assert not rows["chainplan sweep 0"].within_plan()


def test_compared_at_the_larger_of_budget_and_peak(report: ModuleType) -> None:
    """chainplan at per-block's peak (21 MiB) measured 22: compared within 22 MiB, where
    per-block (21) fits and SAC (25) and plain (30) do not. At SAC's peak (25) it measured
    23: compared within 25, where SAC, the faster, fits. The sweep's smallest plan (18 MiB)
    is compared with nothing, since no alternative fits."""
    comps = report.comparisons(report.rows_of(_ranks(), "main"))
    assert [(c.name, m, best.name) for c, m, best, _ in comps] == [
        ("chainplan @ FSDP2 + per-block AC", 22 * MiB, "FSDP2 + per-block AC"),
        ("chainplan @ FSDP2 + per-op SAC", 25 * MiB, "FSDP2 + per-op SAC")]
    assert [c[3] for c in comps] == pytest.approx([1.05 / 1.2, 1.0 / 1.1])


def test_render_states_the_figures_against_the_targets(report: ModuleType) -> None:
    text = report.render(report.rows_of(_ranks(), "main"), "header", 3, ["a note"])
    assert "ran **0.875x** its time" in text  # 1.05 / 1.2, planned with rank_memory's part
    assert "with the fixed part measured, no plan (infeasible" in text
    # The sweep's smallest plan (18 MiB, 1.5x plain) is the only one within 21 MiB.
    assert "within that memory, chainplan sweep 0 (18.00 MiB), ran **1.250x** its time" in text
    assert "geometric mean **0.892**, worst **0.909** over 2 chainplan budgets" in text
    assert "2 of 3 plans on every rank; measured / planned 0.87-1.06" in text
    assert "| chainplan @ FSDP2 + per-block AC, chainplan sweep 1 | main | 22.00 " in text
    assert "* a note" in text
