"""pipeline_plan(): the Go planners in-process, the request checks, storing and reloading."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainplan.errors import ArgumentTypeError, InfeasibleBudget, NotFoundError, PlanError
from chainplan.pipeline import PipelinePlan, pipeline_plan
from chainplan.pipeline.planning import load_plan
from tests.pipeline import chains


@pytest.fixture
def eight(tmp_path: Path) -> Path:
    return chains.write(tmp_path / "eight.json")


def test_the_three_planners(eight: Path) -> None:
    # Memories from the sweep of tests/pipeline/chains.py (4 devices, β = 1e4 bytes/unit).
    got = {algo: pipeline_plan(eight, gpus=4, memory=mem, bandwidth=1e4, algo=algo,
                               microbatches=6, time_limit_s=5)
           for algo, mem in [("contiguous", 2500), ("pipedream", 4000), ("madpipe", 10000)]}
    c = got["contiguous"]
    assert c.contiguous and c.stages_on(3) == () and c.microbatches == 6
    assert c.plan_id is None and c.layer_param_bytes is None  # a chain file: nothing stored
    assert got["pipedream"].algo == "pipedream" and got["pipedream"].memory_bytes == 4000
    m = got["madpipe"]
    assert m.chosen == "madpipe" and not m.contiguous
    held = [[s.index for s in m.stages_on(g)] for g in range(4)]
    assert any(b - a > 1 for ks in held for a, b in zip(ks, ks[1:], strict=False)), held
    assert m.period < got["contiguous"].period


def test_memory_min_and_infeasible(eight: Path) -> None:
    p = pipeline_plan(eight, gpus=4, memory="min", bandwidth="10kB/s", algo="contiguous")
    with pytest.raises(InfeasibleBudget, match="contiguous: no plan fits 1500 B") as e:
        pipeline_plan(eight, gpus=4, memory=1500, bandwidth=1e4, algo="contiguous")
    assert e.value.min_budget_bytes == p.memory_bytes == 1920


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"algo": "MadPipe"}, PlanError, "unknown pipeline algorithm 'MadPipe'"),
    ({"algo": 3}, ArgumentTypeError, r"algo must be a str"),
    ({"gpus": 0}, PlanError, r"gpus must be at least 1 \(got 0\)"),
    ({"gpus": 2.0}, ArgumentTypeError, r"gpus must be an integer \(got 2\.0 \(float\)\)"),
    ({"memory": 1.5e9}, ArgumentTypeError, r"memory must be an int \(bytes per device\)"),
    ({"memory": "lots"}, PlanError, "lots"),
    ({"bandwidth": -1}, PlanError, r"bandwidth must be a positive, finite number"),
    ({"weight_copies": 0}, PlanError, r"weight_copies must be at least 1"),
    ({"activation_model": "all"}, PlanError, r"activation_model must be 'saved' or 'input'"),
    ({"microbatches": 0}, PlanError, r"microbatches must be a positive integer \(got 0\)"),
    ({"time_limit_s": 0}, PlanError, r"time_limit_s must be a positive number"),
])
def test_bad_requests_name_the_argument(eight: Path, kwargs: dict[str, object],
                                        error: type[Exception], message: str) -> None:
    args: dict[str, object] = {"gpus": 4, "memory": 4000, "bandwidth": 1e4, "algo": "contiguous"}
    args.update(kwargs)
    with pytest.raises(error, match=message):
        pipeline_plan(eight, **args)  # type: ignore[arg-type]


def test_sources(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="is not an existing chain file"):
        pipeline_plan(tmp_path / "none.json", gpus=2, memory=1000, bandwidth=1.0)
    with pytest.raises(PlanError, match="takes a Profile, a run id or a chain file"):
        pipeline_plan(3.5, gpus=2, memory=1000, bandwidth=1.0)  # type: ignore[arg-type]


def test_plans_of_a_profile_are_stored_and_reload() -> None:
    import torch

    import chainplan
    from tests.pipeline import workers

    x = torch.randn(2, 16)
    prof = chainplan.profile(workers.chain(4), x, loss_fn=workers.loss_fn, target=x,
                             spread_warning=None)
    p = pipeline_plan(prof, gpus=2, memory="min", bandwidth="1GB/s", algo="contiguous",
                      microbatches=8)
    assert p.plan_id is not None and p.run_id == prof.run_id and p.microbatches == 8
    # One Linear(16, 16) per block: (256 + 16) × 4 bytes (tests/pipeline/workers.py).
    assert p.layer_param_bytes == (1088,) * 4
    row = chainplan.query(f"SELECT algo, budget_bytes, makespan_s FROM plans "
                          f"WHERE plan_id = {p.plan_id}").to_pylist()[0]
    assert row == {"algo": "contiguous", "budget_bytes": p.memory_bytes,
                   "makespan_s": pytest.approx(p.period)}
    back = PipelinePlan.load(p.plan_id)
    assert (back.stages, back.pattern, back.period) == (p.stages, p.pattern, p.period)
    assert back.layer_param_bytes == p.layer_param_bytes and back.run_id == p.run_id
    assert back.microbatches == 8  # stored in the document
    with pytest.raises(NotFoundError, match="no plan 999"):
        load_plan(999)
    rotor = chainplan.plan(prof, budget="min")
    assert rotor.plan_id is not None
    with pytest.raises(chainplan.errors.ScheduleError, match="not a pipeline plan"):
        load_plan(rotor.plan_id)
