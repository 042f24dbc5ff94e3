"""pipeline_plan() and load_plan() cross into Go once each: the plan, its stored id and each
layer's weights come back together, and the sizes the user wrote are read on the Go side of
that crossing (issue 22).

pipeline_plan() on a stored run finds the database inside its one crossing (Python passes
the environment of the moment), and so does load_plan(): every binding takes the database
in that one spelling, so no crossing reads the database's path first (``DBPath`` is
gone)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainplan import _bind
from chainplan.pipeline import pipeline_plan
from chainplan.pipeline.requests import load_plan
from tests.pipeline import chains


class _Counting:
    """The gopy module, with every function call into it written down by name."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        fn = getattr(self._module, name)

        def crossing(*args: Any) -> Any:
            self.calls.append(name)
            return fn(*args)
        return crossing


@pytest.fixture
def go(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counting]:
    counting = _Counting(_bind._go())
    monkeypatch.setattr(_bind, "_module", counting)
    yield counting


@pytest.fixture
def stored_run(tmp_path: Path) -> int:
    # A chain file ingested as a run would need a profile; plan a stored profile instead.
    import torch

    import chainplan
    from tests.pipeline import workers

    x = torch.randn(2, 16)
    prof = chainplan.profile(workers.chain(3), x, loss_fn=workers.loss_fn, target=x,
                             spread_warning=None)
    assert prof.run_id is not None
    return int(prof.run_id)


def test_one_crossing_per_stored_plan(go: _Counting, stored_run: int) -> None:
    _bind.use_highs()  # the HiGHS program is passed once per process, before the first plan
    go.calls.clear()
    plan = pipeline_plan(stored_run, gpus=2, memory="64MiB", bandwidth="1GB/s",
                         algo="contiguous", replan=True)
    assert go.calls == ["Pipeline"]
    assert plan.plan_id is not None and plan.memory_bytes == 64 << 20
    assert plan.bandwidth == 1e9
    # One Linear(16, 16) per block: (256 + 16) × 4 bytes, sent with the plan.
    assert plan.layer_param_bytes == (1088,) * 3

    go.calls.clear()
    again = pipeline_plan(stored_run, gpus=2, memory="min", bandwidth=1e9, algo="contiguous")
    assert go.calls == ["Pipeline"]
    assert again.layer_param_bytes == plan.layer_param_bytes

    go.calls.clear()
    back = load_plan(plan.plan_id)
    assert go.calls == ["PlanDocument"]
    assert back.layer_param_bytes == plan.layer_param_bytes and back.run_id == stored_run


def test_one_crossing_for_a_chain_file(go: _Counting, tmp_path: Path) -> None:
    _bind.use_highs()
    go.calls.clear()
    plan = pipeline_plan(chains.write(tmp_path / "eight.json"), gpus=4, memory="4kB",
                         bandwidth="10kB/s", algo="contiguous", temporaries=False)
    assert go.calls == ["Pipeline"]
    assert plan.memory_bytes == 4000 and plan.layer_param_bytes is None


def test_a_request_go_refuses_is_refused_in_that_crossing(go: _Counting, tmp_path: Path) -> None:
    from chainplan.errors import PlanError

    _bind.use_highs()
    go.calls.clear()
    eight = chains.write(tmp_path / "eight.json")
    with pytest.raises(PlanError, match=r"unknown pipeline algorithm .rotor. \(want madpipe"):
        pipeline_plan(eight, gpus=4, memory=4000, bandwidth=1e4, algo="rotor")
    with pytest.raises(PlanError, match=r"bandwidth must be a number .* bandwidth .fast."):
        pipeline_plan(eight, gpus=4, memory=4000, bandwidth="fast")
    assert go.calls == ["Pipeline", "Pipeline"]
