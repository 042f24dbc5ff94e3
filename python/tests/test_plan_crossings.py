"""plan() crosses into Go once (issue 22): ``pybind.Plan`` reads the sizes as the user wrote
them, resolves the database, chooses the default algorithm, plans (recording a stored run's
plan) and answers with the whole planned document, which Python decodes once and reads,
trusted, into the typed plan. Before, ``plan(prof, budget="min")`` of a stored profile
crossed five times (``Algorithms``, ``DBPath``, ``SolveRun``, ``DBPath``, ``Run``;
``ParseBytes`` too for a size string) and decoded the plan twice; of a profile file twice
(``SolveFile``, ``ProfileChain``), reading the file a third time with pyarrow for its input
shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.algorithms import algorithms
from chainplan.errors import InfeasibleBudget, PlanError
from chainplan.schedule import Plan
from chainplan.tradeoff import chain_json
from tests.pipeline.test_crossings import _Counting


@pytest.fixture
def go(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Counting]:
    counting = _Counting(_bind._go())
    monkeypatch.setattr(_bind, "_module", counting)
    yield counting


def _model() -> nn.Sequential:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 4))


def _profile(*, ingest: bool) -> chainplan.Profile:
    return chainplan.profile(_model(), torch.randn(3, 8), repeats=1, warmup=0, progress=False,
                             spread_warning=None, ingest=ingest)


def test_a_stored_profile_in_one_crossing(go: _Counting) -> None:
    prof = _profile(ingest=True)
    go.calls.clear()
    plan = chainplan.plan(prof, budget="min")
    assert go.calls == ["Plan"]
    assert plan.plan_id is not None and plan.run_id == prof.run_id
    assert plan.input_shape == (3, 8) and plan.algo == "rotor"
    assert plan.chain_json is None  # a stored run's chain is in the database
    assert plan.budget_bytes == chainplan.tradeoff.min_budget(prof)
    assert plan.peak_bytes <= plan.budget_bytes

    go.calls.clear()
    again = chainplan.plan(int(prof.run_id or 0), budget="2GB", algo="rotor", slots=100)
    assert go.calls == ["Plan"]  # the registry was read once, by min_budget above
    assert again.budget_bytes == 2 * 10**9 and again.slots == 100
    assert again.plan_id == plan.plan_id + 1
    stored = _bind.plan_document(int(again.plan_id or 0))["plan"]
    assert Plan.from_json(json.dumps(stored), plan_id=again.plan_id, run_id=again.run_id,
                          input_shape=again.input_shape) == again


def test_a_profile_file_in_one_crossing(go: _Counting) -> None:
    prof = _profile(ingest=False)
    assert prof.run_id is None
    go.calls.clear()
    plan = chainplan.plan(prof, budget="min")
    assert go.calls == ["Plan"]
    assert plan.plan_id is None and plan.run_id is None and plan.input_shape == (3, 8)
    assert plan.chain_json is not None and json.loads(plan.chain_json)["stages"]
    # The same plan as the one read through the strict path.
    assert Plan.from_json(json.dumps(plan.raw), input_shape=(3, 8)) == plan


def test_a_chain_file_and_an_offloading_plan_in_one_crossing(go: _Counting,
                                                              tmp_path: Path) -> None:
    prof = _profile(ingest=True)
    chain = tmp_path / "chain.json"
    chain.write_text(chain_json(int(prof.run_id or 0)))
    algorithms()  # the registry, read once per process, checks a named algorithm
    go.calls.clear()
    plan = chainplan.plan(chain, budget="min", algo="pofo", bandwidth="12GB/s")
    assert go.calls == ["Plan"]
    assert plan.algo == "pofo" and plan.offload is not None
    assert plan.offload.bandwidth_bytes_per_s == 12e9 and plan.chain_json == chain.read_text()
    strict = Plan.from_json(json.dumps(plan.raw), chain_json=plan.chain_json)
    assert strict == plan and strict.offload == plan.offload
    plan.validate()  # the trusted offload section needs no second check


def test_go_refuses_in_the_same_crossing(go: _Counting, tmp_path: Path) -> None:
    prof = _profile(ingest=True)
    algorithms()
    go.calls.clear()
    with pytest.raises(PlanError, match=r'budget: byte size "lots"'):
        chainplan.plan(prof, budget="lots")
    with pytest.raises(PlanError, match=r'bandwidth "fast"'):
        chainplan.plan(prof, budget="min", algo="pofo", bandwidth="fast")
    with pytest.raises(PlanError, match="a bandwidth applies to"):
        chainplan.plan(prof, budget="min", bandwidth="12GB/s")  # the default reads none
    with pytest.raises(InfeasibleBudget) as info:
        chainplan.plan(prof, budget=1)
    assert go.calls == ["Plan"] * 4
    assert info.value.min_budget_bytes == chainplan.tradeoff.min_budget(prof)
    assert chainplan.query("SELECT count(*) AS n FROM plans").to_pylist() == [{"n": 0}]
