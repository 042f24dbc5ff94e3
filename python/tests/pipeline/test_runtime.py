"""The private-API module: the torch releases it accepts, and torch's own lowering."""

from __future__ import annotations

import pytest
import torch

from chainplan.errors import PipelineError
from chainplan.pipeline import runtime


def test_this_torch_is_tested() -> None:
    runtime.check_torch_version()  # the release the suite runs on is in TESTED_TORCH


@pytest.mark.parametrize("version", ["2.14.1", "2.16.0", "3.0.0", "nightly"])
def test_other_torch_releases_are_refused_by_name(version: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runtime.ANY_TORCH_ENV, raising=False)
    lo, hi = runtime.TESTED_TORCH
    with pytest.raises(PipelineError, match=rf"tested with torch {lo[0]}\.{lo[1]}.* \(this is "
                                            rf"torch {version}\).*CHAINPLAN_PIPELINE_ANY_TORCH"):
        runtime.check_torch_version(version)
    monkeypatch.setenv(runtime.ANY_TORCH_ENV, "1")
    runtime.check_torch_version(version)  # the user asked to try


def test_private_names_are_where_the_runtime_expects_them() -> None:
    # What runtime.py imports: a torch that moved them fails here, not in a rank.
    from torch.distributed.pipelining import schedules

    assert hasattr(schedules._PipelineScheduleRuntime, "_prepare_schedule_with_comms")
    assert {"F", "B"} <= {t.value for t in schedules._ComputationType}
    assert runtime.failure_store() is None or torch.distributed.is_initialized()
