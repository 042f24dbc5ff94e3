"""Errors that say what went wrong, and the one size rule Python shares with the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.errors import (
    ArgumentTypeError,
    ChainplanError,
    NotFoundError,
    PlanError,
    ProfileError,
    QueryError,
)

CHAIN = {
    "format": "chainplan.chain/v1", "input_bytes": 2,
    "stages": [{"name": f"s{i}", "fwd_time": f, "bwd_time": b, "out_bytes": a,
                "saved_bytes": s, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}
               for i, (f, b, a, s) in enumerate([(1, 2, 4, 6), (2, 4, 2, 8), (1, 2, 4, 7)], 1)],
}


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(CHAIN))
    return path


@pytest.mark.parametrize(("text", "want"), [
    ("123456", 123456), ("1e9", 10**9), ("1E9", 10**9), ("2.5e3", 2500),
    ("2g", 2 * 10**9), ("2G", 2 * 10**9), ("2GB", 2 * 10**9), ("2gb", 2 * 10**9),
    ("2Gi", 2 << 30), ("2GiB", 2 << 30), ("2 gib", 2 << 30), ("1.5 GiB", 3 << 29),
    ("1.5e3MB", 1_500_000_000), ("4k", 4000), ("4KiB", 4096), ("0.1GB", 10**8), ("7 B", 7),
])
def test_sizes_follow_one_rule(text: str, want: int) -> None:
    """SI units are powers of 1000 with or without B, IEC units powers of 1024, any case,
    scientific notation accepted: the Go parser, shared with the CLI (docs/CLI.md)."""
    assert _bind.parse_bytes(text) == want


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"), ("-1", "negative"), ("NaN", "not a number"), ("inf", "not a number"),
    ("1e400", "out of range"), ("2XB", 'unknown unit "XB"'),
    ("1.5", "not a whole number of bytes"), ("12 parsecs", 'unknown unit "parsecs"'),
])
def test_bad_sizes_are_named(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message) as info:
        _bind.parse_bytes(text)
    # Said once: the code's "bad request" is not repeated in the message.
    assert str(info.value).startswith(f"byte size {json.dumps(text)}: ")


def test_bandwidths_are_sizes_per_second() -> None:
    assert _bind.parse_bandwidth("12GB/s") == 12e9
    assert _bind.parse_bandwidth("1.5 GiB/s") == 1.5 * (1 << 30)
    assert _bind.parse_bandwidth("1.2e10") == 1.2e10
    assert _bind.parse_bandwidth("0.5") == 0.5
    for bad, message in [("0/s", "positive"), ("12XB/s", 'unknown unit "XB"'),
                         ("fast", "not a number"), ("-1GB/s", "negative")]:
        with pytest.raises(PlanError, match=message):
            _bind.parse_bandwidth(bad)


def test_plan_budgets_and_bandwidths(chain: Path) -> None:
    spellings = ("24", "2.4e1", "0.024kB", "24B", 24)
    plans = [chainplan.plan(chain, budget=b, slots=24) for b in spellings]
    assert {(p.budget_bytes, p.makespan, str(p)) for p in plans} == {
        (24, plans[0].makespan, str(plans[0]))}
    p = chainplan.plan(chain, budget="24", algo="pofo", bandwidth="1e9/s", slots=24)
    assert p.raw["offload"]["bandwidth_bytes_per_s"] == 1e9
    for bad in (float("nan"), float("inf"), 0, -3.0):
        with pytest.raises(PlanError, match="bandwidth must be a positive, finite number"):
            chainplan.plan(chain, budget="24", algo="pofo", bandwidth=bad)
    with pytest.raises(PlanError, match="budget must be positive"):
        chainplan.plan(chain, budget="0")


@pytest.mark.parametrize(("kwargs", "names"), [
    ({"budget": 2.5}, "budget must be an int"),
    ({"budget": 2e9}, "budget must be an int"),
    ({"budget": [1]}, r"budget must be .* \(got \[1\] \(list\)\)"),
    ({"budget": True}, "budget must be an int"),
    ({"budget": "24", "slots": "10"}, r"slots must be a positive integer.*'10' \(str\)"),
    ({"budget": "24", "slots": 2.5}, "slots must be a positive integer"),
    ({"budget": "24", "segments": "2"}, "segments must be an integer"),
    ({"budget": "24", "algo": 3}, "algo must be a str"),
    ({"budget": "24", "algo": "pofo", "bandwidth": [1]}, "bandwidth must be bytes per second"),
    ({"budget": "24", "algo": "pofo", "bandwidth": True}, "bandwidth must be bytes per second"),
])
def test_wrong_argument_types(chain: Path, kwargs: dict[str, object], names: str) -> None:
    with pytest.raises(TypeError, match=names) as info:
        chainplan.plan(chain, **kwargs)  # type: ignore[arg-type]
    # A TypeError, and still a PlanError for code that caught the planner's errors.
    assert isinstance(info.value, ArgumentTypeError) and isinstance(info.value, PlanError)


def test_unknown_algorithm_before_bandwidth(chain: Path) -> None:
    with pytest.raises(PlanError, match='unknown algorithm "POFO" .*did you mean "pofo"'):
        chainplan.plan(chain, budget="24", algo="POFO", bandwidth="12GB/s")
    with pytest.raises(PlanError, match='unknown algorithm "Rotor"'):
        chainplan.plan(chain, budget="24", algo="Rotor")


def test_plan_of_a_string_that_is_no_file(tmp_path: Path) -> None:
    # Go reads the source (service.Resolve) and names the problem, the same for every call.
    with pytest.raises(NotFoundError, match=r'source "1" is not an existing file.*for the stored '
                                            r"run 1 pass the integer 1, not a string"):
        chainplan.plan("1", budget="1GiB")
    with pytest.raises(NotFoundError, match='missing.json" is not an existing file'):
        chainplan.plan(str(tmp_path / "missing.json"), budget="1GiB")
    with pytest.raises(PlanError, match=f"{tmp_path}: is a directory"):
        chainplan.plan(tmp_path, budget="1GiB")
    with pytest.raises(PlanError, match=r"plan\(\): a run id is a positive integer \(got 0\)"):
        chainplan.plan(0, budget="1GiB")


def test_query_errors() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    chainplan.profile(model, torch.randn(2, 4), repeats=1, warmup=0, progress=False,
                      spread_warning=None)  # creates the database
    with pytest.raises(QueryError) as info:
        chainplan.query("SELEC 1")
    assert str(info.value) == 'bad query: near "SELEC": syntax error'
    with pytest.raises(QueryError, match="^bad query: no such column: nope$"):
        chainplan.query("SELECT nope FROM runs")
    with pytest.raises(QueryError, match="^query refused: queries are read-only"):
        chainplan.query("DELETE FROM runs")
    assert isinstance(info.value, ValueError) and isinstance(info.value, ChainplanError)
    assert not isinstance(info.value, PlanError)


class Mismatch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(5, 5)


def test_a_failing_stage_is_named() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), Mismatch())
    with pytest.raises(ProfileError, match=r"^stage 3 \(2:Mismatch\) failed while profiling: "
                                           r"RuntimeError: .*mat1 and mat2 shapes") as info:
        chainplan.profile(model, torch.randn(2, 4), ingest=False, progress=False)
    assert (info.value.stage_index, info.value.stage_name) == (3, "2:Mismatch")
    assert isinstance(info.value.__cause__, RuntimeError)

    def bad_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        raise KeyError("no such label")

    model = nn.Sequential(nn.Linear(4, 4))
    with pytest.raises(ProfileError, match=r"^stage 2 \(loss bad_loss\) failed while "
                                           r"profiling: KeyError") as info:
        chainplan.profile(model, torch.randn(2, 4), loss_fn=bad_loss, target=torch.zeros(2),
                          ingest=False, progress=False)
    assert isinstance(info.value.__cause__, KeyError)
