"""What a pipeline plan and a measured run say in words (issue 33, item 9): every time with
its unit, the comparisons saying what is compared, and never "nan ms" where the run had no
steady state. And what a measured run prints besides: nothing from torch's CPU allocator.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainplan.pipeline.measure import PipelineExecution, RankMeasure
from chainplan.pipeline.plan import PipelinePlan
from chainplan.profiler.summary import format_seconds
from tests.pipeline.plans import modulo_plan

PYTHON_DIR = Path(__file__).resolve().parents[2]


def _plan(**extra: float) -> PipelinePlan:
    """A plan of period 6 ms (times in seconds, as chainplan's chains have them)."""
    doc = modulo_plan([0, 1, 1, 0])  # times 1 and 2 a stage, period 6
    assert doc["period"] == 6
    doc["period"] *= 1e-3
    for op in doc["pattern"]:
        op["start"] *= 1e-3
        op["duration"] *= 1e-3
    return PipelinePlan.from_dict({**doc, **extra})


def test_a_plan_says_its_period_with_its_unit() -> None:
    text = str(_plan())
    assert text == "hand on 2 GPUs, period 6 ms per micro-batch: 1-1@0 2-2@1 3-3@1 4-4@0", text


def test_a_plan_says_what_it_is_compared_with() -> None:
    """It said "(2.00x one device, 0.90x the best plan without a memory limit)": 0.90x of
    what, and was smaller better? The period is 1.11x that of the best plan without a limit
    (0.9 = 5.4 ms / 6 ms is the memory_cost attribute)."""
    plan = _plan(sequential_time=0.012, unconstrained_period=0.0054)
    assert plan.memory_cost == pytest.approx(0.9)
    text = str(plan)
    assert text.endswith("(2.00x the throughput of one device, which takes 12 ms per "
                         "micro-batch; period 1.11x that of the best plan without a memory "
                         "limit, 5.4 ms)"), text
    assert "x the best plan" not in text


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0054, "5.4 ms"), (6, "6 s"), (2.5e-5, "25 µs"), (9000, "2.5 h"), (0, "0 µs"),
    (math.nan, "unknown")])
def test_times_have_units(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def _execution(per_microbatch: float) -> PipelineExecution:
    ranks = tuple(RankMeasure(r, "cpu", "h", (r,), 0.04, per_microbatch, 2**20, 2**20)
                  for r in range(2))
    return PipelineExecution("Schedule1F1B", 8, 3, 0.04, per_microbatch, 0.0045, ranks)


def test_a_run_with_a_steady_state_says_its_time_per_micro_batch() -> None:
    text = str(_execution(0.0047)).splitlines()[0]
    assert text == ("Schedule1F1B, 8 micro-batches: step 40 ms, 4.7 ms per micro-batch in the "
                    "steady state (the plan's period: 4.5 ms per micro-batch)"), text


def test_a_run_without_a_steady_state_says_so() -> None:
    """It printed "nan ms per micro-batch"."""
    text = str(_execution(math.nan))
    assert "nan" not in text.lower(), text
    assert "no steady state to time" in text and "5 ms per micro-batch over the whole step" \
        in text, text


def test_measuring_prints_nothing_from_the_cpu_allocator(tmp_path: Path) -> None:
    """Every runner.measure after a training step printed torch's "[W … CPUAllocator.cpp]
    Memory block of unknown size was allocated before the profiling started" once per rank:
    the step freed the previous step's gradients inside the memory probe of the warm-up
    step, blocks the CPU allocator had not recorded. torch writes it from C++ to the
    process's standard error, so the ranks run as a program here."""
    env = {**os.environ, "CHAINPLAN_DB": str(tmp_path / "chainplan.db")}
    done = subprocess.run([sys.executable, "-m", "tests.pipeline.measure_quietly"],
                          cwd=PYTHON_DIR, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "per micro-batch in the steady state" in done.stdout, done.stdout
    assert "Memory block of unknown size" not in done.stderr, done.stderr[-3000:]
    assert "CPUAllocator" not in done.stderr, done.stderr[-3000:]
