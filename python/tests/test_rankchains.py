"""The chain a data-parallel group plans on (chainplan.rankchains): per field the most any
rank measured, the structure the same on every rank."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import chainplan
from chainplan.errors import PlanError
from chainplan.rankchains import combine_chains


def _chain(fwd: list[float], saved: list[int]) -> dict[str, Any]:
    stages = [{"name": f"s{i}", "fwd_time": f, "bwd_time": 2 * f, "out_bytes": 100,
               "saved_bytes": s, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 10, "param_bytes": 8,
               "saves_input": True, "saves_output": False, "recompute_time": f,
               "options": [{"saved_bytes": 100, "fwd_tmp_bytes": 0, "recompute_time": f / 2,
                            "keep": [3, 5]}]}
              for i, (f, s) in enumerate(zip(fwd, saved, strict=True), start=1)]
    return {"format": "chainplan.chain/v2", "input_bytes": 64, "stages": stages,
            "loss": {"fwd_time": 1e-4, "bwd_time": 1e-4, "fwd_tmp_bytes": 0,
                     "bwd_tmp_bytes": 0}}


def test_the_most_of_each_figure() -> None:
    a, b = _chain([1.0, 3.0], [200, 400]), _chain([2.0, 1.0], [300, 100])
    b["input_bytes"] = 96
    b["stages"][1]["saves_output"] = True
    del b["stages"][0]["recompute_time"]  # not measured on rank 1: left out
    # Options are chosen per rank: those both ranks have (the same nodes kept) stay.
    extra = {"saved_bytes": 150, "fwd_tmp_bytes": 0, "recompute_time": 0.1, "keep": [3]}
    a["stages"][0]["options"].append(extra)
    b["stages"][1]["options"][0]["keep"] = [3, 6]
    got = combine_chains([a, b])
    assert got["input_bytes"] == 96
    assert [s["fwd_time"] for s in got["stages"]] == [2.0, 3.0]
    assert [s["bwd_time"] for s in got["stages"]] == [4.0, 6.0]
    assert [s["saved_bytes"] for s in got["stages"]] == [300, 400]
    assert [s["saves_output"] for s in got["stages"]] == [False, True]
    assert "recompute_time" not in got["stages"][0] and got["stages"][1]["recompute_time"] == 3.0
    assert got["stages"][0]["options"] == [{"saved_bytes": 100, "fwd_tmp_bytes": 0,
                                            "recompute_time": 1.0, "keep": [3, 5]}]
    assert "options" not in got["stages"][1]  # none in common
    assert a["stages"][1] == _chain([1.0, 3.0], [200, 400])["stages"][1]  # left as it was


@pytest.mark.parametrize(("change", "says"), [
    (lambda c: c["stages"].pop(), "chain's stages: the count is 2 on rank 0 and 1 on rank 1"),
    (lambda c: c["stages"][1].update(name="other"),
     "chain's stages[2] (s2)'s name is 's2' on rank 0 and 'other' on rank 1"),
    (lambda c: c["stages"][0].update(out_bytes="many"),
     "chain's stages[1] (s1)'s out_bytes is 100 on rank 0 and 'many' on rank 1"),
])
def test_another_structure_is_refused(change: Any, says: str) -> None:
    a = _chain([1.0, 3.0], [200, 400])
    b = copy.deepcopy(a)
    change(b)
    with pytest.raises(PlanError, match="measured different chains") as e:
        combine_chains([a, a, b])
    assert says.replace("rank 1", "rank 2") in str(e.value)
    assert "ranks [2] differ from rank 0" in str(e.value)


def test_the_planner_reads_the_group_chain(tmp_path: Path) -> None:
    """The combined chain is a chain the planner takes: planned at the smallest budget,
    the group's plan is at least as large as either rank's."""
    a, b = _chain([1.0, 3.0, 2.0], [200, 400, 300]), _chain([2.0, 1.0, 2.0], [300, 100, 500])
    budgets = []
    for i, c in enumerate([a, b, combine_chains([a, b])]):
        path = tmp_path / f"c{i}.chain.json"
        path.write_text(json.dumps(c))
        budgets.append(chainplan.plan(path, budget="min", algo="rotor").budget_bytes)
    assert budgets[2] >= max(budgets[:2]), budgets
