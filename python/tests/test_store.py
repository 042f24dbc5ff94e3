"""The store from Python goes through the Go service: where the database lives, what a
plan records, run lookups, and no SQL of the package's own against the store's tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.errors import ChainplanError, NotFoundError, PlanError, QueryError
from chainplan.profiler.run import default_profile_dir
from tests.models import MODELS

PACKAGE = Path(chainplan.__file__).parent
# SQL naming a table or view of the store (docs/sql.md).
STORE_SQL = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+(?:runs|stages|measurements|plans|"
                       r"executions|bandwidths|run_summary|stage_history|plan_outcomes)\b")


def test_the_database_is_the_go_rule_at_call_time(private_db: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """$CHAINPLAN_DB, else ~/.chainplan/chainplan.db, read when called (the Go runtime's
    own environment is the one of import time); profiles go next to the database. Every
    binding takes the database in one spelling, the environment of the call
    (``_bind.database()``), and Go applies the rule."""
    assert _bind.database()["db_env"] == str(private_db)
    assert default_profile_dir() == private_db.parent / "profiles"
    other = tmp_path / "elsewhere" / "x.db"
    other.parent.mkdir()
    monkeypatch.setenv("CHAINPLAN_DB", str(other))
    _bind.ingest(str(chainplan.profile(nn.Sequential(nn.Linear(2, 2)), torch.randn(1, 2),
                                       repeats=1, warmup=0, progress=False,
                                       spread_warning=None, ingest=False).path))
    assert other.is_file()
    monkeypatch.delenv("CHAINPLAN_DB")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_profile_dir() == tmp_path / "home" / ".chainplan" / "profiles"
    assert not (tmp_path / "home" / ".chainplan" / "chainplan.db").exists()
    with pytest.raises(NotFoundError):  # reading creates nothing, and reads the home's
        chainplan.query("SELECT 1")


def _profile() -> chainplan.Profile:
    model, x = MODELS["vgg"]()
    y = torch.randint(0, 10, (x.shape[0],))
    return chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=2,
                             warmup=1, progress=False)


def _params(plan_id: int | None) -> dict[str, object]:
    rows = chainplan.query(f"SELECT params_json FROM plans WHERE plan_id = {plan_id}").to_pylist()
    out: dict[str, object] = json.loads(rows[0]["params_json"])
    return out


def test_plans_record_one_parameter_set() -> None:
    """plan() and Checkpointed record the keys the CLI records (docs/sql.md), with their
    own source."""
    prof = _profile()
    p = chainplan.plan(prof, budget="min", slots=300)
    assert _params(p.plan_id) == {
        "algo": "rotor", "budget": "min", "budget_bytes": p.budget_bytes, "slots": 300,
        "segments": 0, "chosen_segments": 0, "bandwidth_bytes_per_s": 0, "source": "python"}
    q = chainplan.plan(prof, budget=2 * p.budget_bytes, algo="sequential")
    assert _params(q.plan_id) == {
        "algo": "sequential", "budget": 2 * p.budget_bytes, "budget_bytes": 2 * p.budget_bytes,
        "slots": 0, "segments": 0, "chosen_segments": q.raw["segments"],
        "bandwidth_bytes_per_s": 0, "source": "python"}
    model, x = MODELS["vgg"]()
    net = chainplan.Checkpointed(model, budget="min", loss_fn=nn.CrossEntropyLoss(),
                                 target=lambda t: torch.zeros(t.shape[0], dtype=torch.long),
                                 repeats=2, warmup=1)
    net(x).sum().backward()
    (last,) = chainplan.query("SELECT max(plan_id) AS id FROM plans").to_pylist()
    assert _params(last["id"])["source"] == "checkpointed"


def test_run_lookups() -> None:
    """Run metadata comes from the service: runs() with its filter, run() one run."""
    prof = _profile()
    (listed,) = chainplan.history.runs()
    assert listed["run_id"] == prof.run_id and listed["device"] == "cpu"
    assert listed["input_shape"] == list(MODELS["vgg"]()[1].shape)
    assert _bind.run(prof.run_id) == listed
    assert _bind.runs(loss_name="CrossEntropyLoss", saved_measured=True, device="cpu") == [listed]
    assert _bind.runs(loss_name="mse") == []
    with pytest.raises(NotFoundError, match="no run 9"):
        _bind.run(9)


def test_no_store_sql_in_the_package() -> None:
    """Only chainplan.query runs SQL, the user's: the package asks the Go service."""
    found = [f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "__init__.py"
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if STORE_SQL.search(line)]
    assert found == []


PROFILE_FILE = Path(__file__).resolve().parents[2] / "testdata" / "profiles" / "resnet_file.arrow"


def test_query_binds_parameters(private_db: Path) -> None:
    """Issue 33: chainplan.query() took no parameters. Each binds one placeholder, $N the
    Nth (SQLite also takes ?), with its type."""
    run_id = _bind.ingest(str(PROFILE_FILE))
    rows = chainplan.query("SELECT run_id FROM runs WHERE run_id = $1 AND batch_size > $2",
                           run_id, 0)
    assert rows.to_pylist() == [{"run_id": run_id}]
    assert chainplan.query("SELECT run_id FROM runs WHERE run_id = ?;", run_id).num_rows == 1
    got = chainplan.query("SELECT CAST($2 AS TEXT) AS b, CAST($1 AS TEXT) AS a, $3 + 0 AS t, "
                          "$4 IS NULL AS n, $5 AS f", "x", "y", True, None, 1.5)
    assert got.to_pylist() == [{"b": "y", "a": "x", "t": 1, "n": 1, "f": 1.5}]


def test_query_refuses_what_it_cannot_bind(private_db: Path) -> None:
    """Issue 33: a second statement ran, and an extra argument was ignored."""
    _bind.ingest(str(PROFILE_FILE))
    with pytest.raises(QueryError, match="several statements; run one at a time"):
        chainplan.query("SELECT 1; SELECT 2")
    with pytest.raises(QueryError, match="0 placeholders and 1 argument given"):
        chainplan.query("SELECT 1", 5)
    with pytest.raises(QueryError, match="1 placeholder and 0 arguments given"):
        chainplan.query("SELECT $1")
    with pytest.raises(TypeError, match="query parameter 2: bytes"):
        chainplan.query("SELECT $1, $2", 1, b"x")
    with pytest.raises(ValueError, match="query parameter 1: nan is not a finite number"):
        chainplan.query("SELECT $1", float("nan"))


def test_keyword_value_dsn_is_no_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: a keyword/value DSN was taken for a file name, password included. It names
    a PostgreSQL store: profiles go to ~/.chainplan, no file is made under its name, and no
    message shows its password; a value that is neither a DSN nor a path is refused."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CHAINPLAN_DB",
                       "host=127.0.0.1 port=1 user=ann password=PW dbname=lab connect_timeout=5")
    assert _bind.data_dir() == str(tmp_path / "home" / ".chainplan")
    with pytest.raises(ChainplanError) as refused:
        chainplan.query("SELECT 1")
    assert "PW" not in str(refused.value)
    assert "host=127.0.0.1 port=1 user=ann dbname=lab" in str(refused.value)
    monkeypatch.setenv("CHAINPLAN_DB", "my dir/x=1 password=PW")
    for call in (_bind.data_dir, lambda: chainplan.query("SELECT 1")):
        with pytest.raises(PlanError, match="neither a PostgreSQL DSN") as bad:
            call()
        assert "PW" not in str(bad.value)
    assert [p.name for p in tmp_path.iterdir()] in ([], ["home"])  # nothing named after the DSN
