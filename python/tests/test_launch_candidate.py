"""The launch candidate's one JSON shape: read, written back, refused by field, and read
from a search3d result's candidate."""

from __future__ import annotations

from pathlib import Path

import pytest

import chainplan
from chainplan.errors import PlanError
from chainplan.launch.candidate import LaunchCandidate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = {"mesh": {"pp": 2, "dp": 2, "tp": 1}, "microbatch": 4, "microbatches": 8,
           "cuts": [3], "checkpoint": ["min", None]}


def test_round_trip() -> None:
    c = LaunchCandidate.from_dict(EXAMPLE)
    assert (c.pp, c.dp, c.tp, c.world, c.cuts) == (2, 2, 1, 4, (3,))
    assert c.budget(0) == "min" and c.budget(1) is None
    assert c.to_dict() == EXAMPLE
    assert LaunchCandidate.from_json(c.to_json()) == c


def test_defaults_and_one_budget_for_every_stage() -> None:
    c = LaunchCandidate.from_dict({"mesh": {"tp": 2}, "checkpoint": "2GiB"})
    assert c.mesh_shape == {"pp": 1, "dp": 1, "tp": 2} and c.microbatches == 1
    assert c.budget(0) == "2GiB"
    assert LaunchCandidate.from_dict({"mesh": {}, "checkpoint": "none"}).budget(0) is None


@pytest.mark.parametrize(("doc", "message"), [
    ({}, "mesh: missing"),
    ({"mesh": {"pp": 2, "ep": 2}, "cuts": [1]}, "mesh.ep: unknown mesh dimension"),
    ({"mesh": {"dp": 0}}, "mesh.dp: want an integer ≥ 1"),
    ({"mesh": {"dp": True}}, "mesh.dp: want an integer"),
    ({"mesh": {}, "microbatchs": 2}, "microbatchs: unknown field"),
    ({"mesh": {}, "microbatch": 1.5}, "microbatch: want an integer"),
    ({"mesh": {"pp": 3}, "cuts": [2]}, "cuts: want 2 layers for 3 pipeline stages"),
    ({"mesh": {"pp": 3}, "cuts": [4, 2]}, "cuts[1]: want an increasing layer number"),
    ({"mesh": {"pp": 2}, "cuts": [1], "checkpoint": ["min", None, None]},
     "checkpoint: want one budget or 2"),
    ({"mesh": {}, "checkpoint": [-5]}, "checkpoint[0]: want null"),
    ({"mesh": {}, "checkpoint": [True]}, "checkpoint[0]: want null"),
    ({"mesh": {}, "memory": 0}, "memory: want null, a positive byte count"),
    ({"mesh": {}, "memory": [1]}, "memory: want null, a positive byte count"),
    ({"mesh": {}, "memory": "8GiB", "checkpoint": "min"}, "memory and checkpoint: give one"),
])
def test_refused_naming_the_field(doc: dict, message: str) -> None:
    with pytest.raises(PlanError, match=message.replace("[", r"\[").replace("]", r"\]")):
        LaunchCandidate.from_dict(doc)


def test_memory_per_rank() -> None:
    """``memory`` (one rank's device memory) is written back only where it is set: the
    advisors' launch object has no such field."""
    doc = {"mesh": {"pp": 1, "dp": 2, "tp": 1}, "microbatch": 4, "microbatches": 1,
           "cuts": [], "checkpoint": [None], "memory": "8GiB"}
    c = LaunchCandidate.from_dict(doc)
    assert c.memory == "8GiB" and c.budget(0) is None
    assert c.to_dict() == doc and LaunchCandidate.from_json(c.to_json()) == c
    assert "memory" not in LaunchCandidate.from_dict(EXAMPLE).to_dict()


def test_not_json() -> None:
    with pytest.raises(PlanError, match="cand.json: not JSON"):
        LaunchCandidate.from_json("{", "cand.json")


def test_from_a_search3d_candidate() -> None:
    s3 = chainplan.parallel.search3d(ROOT / "examples" / "gpt2-small.json",
                            ROOT / "examples" / "clusters" / "amp-homogeneous.yaml",
                            global_batch=32, batch=1)
    raw = s3.raw["candidates"][0]
    got = LaunchCandidate.from_search3d(raw)
    best = s3.candidates[0]
    assert (got.pp, got.dp, got.tp) == (best.pp, best.dp, best.tmp)
    assert (got.microbatch, got.microbatches) == (best.mbs, best.gas)
    assert got.cuts == tuple(s.last_layer for s in best.stages[:-1])
    want = [s.checkpoint["budget_bytes"] if s.checkpoint else None for s in best.stages]
    assert [got.budget(k) for k in range(got.pp)] == want
    assert any(b is not None for b in want)  # this search checkpoints a stage
    # A candidate that carries the launch shape itself is read from it.
    assert LaunchCandidate.from_search3d({**raw, "launch": EXAMPLE}) == \
        LaunchCandidate.from_dict(EXAMPLE)
