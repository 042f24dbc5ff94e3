"""chainplan.algorithms: the Go planner's registry read once, and the request check that
every entry point runs before any work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.algorithms import Algorithm, algorithms, check_algorithm
from chainplan.errors import ArgumentTypeError, PlanError
from tests.planning import plan_chain


def test_table_is_the_go_registry() -> None:
    table = algorithms()
    assert [a["name"] for a in json.loads(_bind.algorithms())] == list(table)
    assert list(table)[0] == "rotor"  # the default comes first
    assert table["rotor"] == Algorithm(
        name="rotor", family="checkpointing", format="chainplan.schedule/v1",
        summary=table["rotor"].summary, needs=(), takes=("slots",), frontier=True)
    assert table["pofo"].family == "offloading" and table["pofo"].needs == ("bandwidth",)
    assert table["pofo"].format == "chainplan.schedule/v1+offload"
    assert table["sequential"].reads("segments") and not table["rotor"].reads("segments")
    assert [a.name for a in table.values() if a.frontier] == ["rotor", "rotor-ops", "revolve"]
    assert algorithms() is table  # read once


@pytest.mark.parametrize(("algo", "options", "message"), [
    ("POFO", {"bandwidth": True},
     r'^unknown algorithm "POFO" \(names are lower-case: did you mean "pofo"\? '
     r'want one of rotor, '),
    ("magic", {},
     r'^unknown algorithm "magic" \(want one of rotor, rotor-ops, optimal, revolve, '),
    ("rotor", {"segments": 2}, r'^segments apply to the sequential algorithm only \(got algorithm '
                               r'"rotor"\)$'),
    ("pofo", {}, r'^algorithm "pofo" needs a bandwidth'),
    ("rotor", {"bandwidth": True},
     r'^a bandwidth applies to the offloading algorithms only '
     r'\(pofo, offload, greedy, autocapper, opportunist\), not to "rotor"$'),
])
def test_check_algorithm_refuses(algo: str, options: dict[str, bool | int], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        check_algorithm(algo, **options)  # type: ignore[arg-type]


def test_check_algorithm_accepts() -> None:
    assert check_algorithm("sequential", segments=3).name == "sequential"
    assert check_algorithm("greedy", bandwidth=True).family == "offloading"
    with pytest.raises(ArgumentTypeError, match="algo must be a str"):
        check_algorithm(3)  # type: ignore[arg-type]


def test_go_planner_agrees(tmp_path: Path) -> None:
    # Whatever Python refuses, the Go planner refuses with the same words; what Python lets
    # through, Go plans.
    chain = json.dumps({"format": "chainplan.chain/v1", "input_bytes": 2, "stages": [
        {"name": "s", "fwd_time": 1, "bwd_time": 1, "out_bytes": 2, "saved_bytes": 2,
         "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]})
    for algo, req in [("Rotor", {}), ("rotor", {"segments": 2}), ("pofo", {}),
                      ("rotor", {"bandwidth": 1e9}), ("madpipe", {}), ("gpipe", {})]:
        with pytest.raises(PlanError) as py:
            check_algorithm(algo, segments=int(req.get("segments", 0)),
                            bandwidth="bandwidth" in req)
        with pytest.raises(PlanError) as go:
            plan_chain(chain, {"algo": algo, "budget_bytes": 100, **req})
        words = re.split(r" \(|: ", str(py.value))[0]
        assert words in str(go.value), (py.value, go.value)
    for algo in algorithms():
        if algorithms()[algo].family in ("pipeline", "parallel", "simulation"):
            continue  # planned by pipeline_plan, advise and search3d, or simulated by pipesim
        if algorithms()[algo].family == "multichain":  # plans bundles of towers only
            with pytest.raises(PlanError, match="bundle of the towers"):
                plan_chain(chain, {"algo": algo, "min_budget": True})
            continue
        req = {"algo": algo, "min_budget": True}
        if "bandwidth" in algorithms()[algo].needs:
            req["bandwidth"] = 1e9
        assert json.loads(plan_chain(chain, req))["algo"] == algo


def test_plan_checks_before_profiling(private_db: Path) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with pytest.raises(PlanError, match="needs a bandwidth"):
        chainplan.plan(model, budget="min", algo="pofo", sample=torch.randn(2, 4))
    with pytest.raises(PlanError, match="offloading algorithms only"):
        chainplan.tradeoff.min_budget(str(private_db), algo="rotor", bandwidth="auto")
    assert not private_db.exists()  # nothing was profiled, measured or stored
