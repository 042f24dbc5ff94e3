"""What a measured pipeline execution prints: times with their unit, never "nan"."""

from __future__ import annotations

import math

from chainplan.pipeline.measure import PipelineExecution, RankMeasure


def _execution(microbatch_time_s: float) -> PipelineExecution:
    rank = RankMeasure(rank=0, device="cpu", host="h", stages=(0,), step_time_s=0.008,
                       microbatch_time_s=microbatch_time_s, peak_bytes=2**20,
                       predicted_bytes=2**20)
    return PipelineExecution(schedule="plan", microbatches=2, steps=3, step_time_s=0.008,
                             microbatch_time_s=microbatch_time_s, predicted_period_s=0.003,
                             ranks=(rank,))


def test_no_steady_state_is_said_not_printed_as_nan() -> None:
    text = str(_execution(math.nan))
    assert "nan" not in text.lower()
    assert "no steady state to time a micro-batch in (2 micro-batches per step" in text
    assert "the step is 4.000 ms per micro-batch" in text
    assert "(plan: period 3.000 ms)" in text


def test_steady_time_per_microbatch_has_its_unit() -> None:
    assert "step 8.00 ms, 3.500 ms per micro-batch (plan: period 3.000 ms)" in \
        str(_execution(0.0035))
