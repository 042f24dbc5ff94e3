"""The ranks of a data-parallel group agree on one plan (chainplan.agreed; two gloo ranks).

``Checkpointed`` under ``fully_shard`` profiles itself on every rank; the ranks' profiles
are made to differ (fixed times per rank, ``agreeworkers._rank_times``), so that each
rank alone plans another schedule. Gathering the units per stage needs one plan on every
rank: before, the first step refused the ranks' different plans ("gathering FSDP units
per stage needs the same plan on every rank"); now rank 0 plans once on the ranks' chains
and every rank trains with that plan, as FSDP2 alone does (the tolerances of
``test_fsdp.py``). A budget below any plan on one rank only is an ``InfeasibleBudget`` on
every rank; before, that rank raised alone and the other went on into FSDP's collectives.
The process group's timeout is short, so that a rank left waiting fails the test.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.distributed import session
from tests.distributed.test_fsdp import _ok, _same_training


@pytest.fixture(scope="module")
def agreed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    scenarios = [{"name": "plain_fsdp", "kind": "plain_fsdp", "options": {"blocks": 4}},
                 {"name": "differ", "kind": "differing_profiles"},
                 {"name": "short", "kind": "one_rank_short"},
                 {"name": "fails", "kind": "one_rank_differs", "options": {"case": "fails"}},
                 {"name": "options", "kind": "one_rank_differs",
                  "options": {"case": "options"}}]
    return session.run(2, scenarios, tmp_path_factory.mktemp("agreed"),
                       module="tests.distributed.agreeworkers", timeout_s=60)


def test_ranks_with_different_profiles_train_one_plan_per_stage(
        agreed: list[dict[str, Any]]) -> None:
    got = _ok(agreed, "differ")
    # The premise: planned alone, the ranks' profiles give different plans.
    assert got[0]["alone"] != got[1]["alone"], got
    # One plan, the group's, on both ranks; it recomputes (the units are gathered again).
    assert got[0]["agreed"] == got[1]["agreed"], got
    for rank, g in enumerate(got):
        assert g["plans"] == 1 and g["recomputed"], (rank, g)
    _same_training(agreed, "differ")


def test_budget_too_small_on_one_rank_is_raised_on_every_rank(
        agreed: list[dict[str, Any]]) -> None:
    for rank, r in enumerate(agreed):
        got = r["short"]
        assert got["refused"].startswith("InfeasibleBudget: "), (rank, got)
        # Rank 1's budget is the group's: named on both ranks, with the smallest budget.
        assert "within rank 1's budget, the group's smallest" in got["refused"], (rank, got)
        assert got["least"] and got["least"] > 1000, (rank, got)
        assert got["alive"] == 2.0, (rank, got)  # no rank left in a collective


@pytest.mark.parametrize(("name", "says"), [
    # rank 0 names rank 1 and what it met; rank 1 raises its own error
    ("fails", ["PlanError: Checkpointed(GPT) at input shape [2, 16]: rank 1 of the "
               "data-parallel group (ranks [1] failed) could not plan: ZeroDivisionError: "
               "the target of rank 1", "ZeroDivisionError: the target of rank 1"]),
    ("options", ["PlanError: the ranks of the data-parallel group plan with different "
                 "options: ('rotor', None, False, True) on rank 0, ('revolve', None, False, "
                 "True) on rank 1: give every rank the same"] * 2),
])
def test_one_rank_unlike_the_others_is_raised_on_every_rank(
        agreed: list[dict[str, Any]], name: str, says: list[str]) -> None:
    for rank, r in enumerate(agreed):
        got = r[name]
        assert got["refused"] == says[rank], (rank, got)
        assert got["alive"] == 2.0, (rank, got)
