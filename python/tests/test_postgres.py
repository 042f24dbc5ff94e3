"""A team's PostgreSQL store from Python: ``$CHAINPLAN_DB`` names it by a DSN and every call
goes there, the same as with a SQLite file (docs/sql.md, "PostgreSQL").

The server is the one ``make test-py`` starts (``$CHAINPLAN_TEST_PG``, a superuser DSN),
or one this module starts through the Go helper ``internal/pgtest/withpg``. Each test
works in a schema of its own, which the store creates.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.errors import NotFoundError, QueryError
from chainplan.profiler.run import default_profile_dir
from tests.models import MODELS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    """The superuser DSN of a PostgreSQL server for these tests."""
    dsn = os.environ.get("CHAINPLAN_TEST_PG", "")
    if dsn:
        yield dsn
        return
    # No server given: start a private one, stopped when its standard input closes.
    proc = subprocess.Popen(["go", "run", "./internal/pgtest/withpg", "-serve"], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("postgres://"):
        proc.kill()
        pytest.fail(f"withpg did not start a PostgreSQL server (printed {line!r}); "
                    "`make test-py` installs one, or set CHAINPLAN_TEST_PG")
    try:
        yield line
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


@pytest.fixture
def team_store(pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``$CHAINPLAN_DB`` set to a new store: the test role's DSN with a schema of its own."""
    dsn = (pg_server.replace("://postgres@", "://chainplan_test@", 1)
           + ("&" if "?" in pg_server else "?") + "search_path=py_" + secrets.token_hex(6))
    monkeypatch.setenv("CHAINPLAN_DB", dsn)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return dsn


def _profile(*, reuse: bool = True) -> chainplan.Profile:
    model, x = MODELS["vgg"]()
    y = torch.zeros(x.shape[0], dtype=torch.long)
    return chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=2,
                             warmup=1, progress=False, reuse=reuse)


def test_profile_plan_query_on_postgres(team_store: str, tmp_path: Path) -> None:
    """Profile, plan, record an execution and query, all in the team store; profile files
    go to ~/.chainplan/profiles, the store being no folder; profile() finds the stored
    profile of the same call there; writes through chainplan.query are refused."""
    assert _bind.database()["db_env"] == team_store
    assert default_profile_dir() == tmp_path / "home" / ".chainplan" / "profiles"
    with pytest.raises(NotFoundError, match="no schema"):
        chainplan.query("SELECT 1")  # reading creates nothing
    prof = _profile()
    assert prof.run_id == 1 and not prof.reused
    files = list((tmp_path / "home" / ".chainplan" / "profiles").glob("*.arrow"))
    assert len(files) == 1
    same = _profile()  # the same call: the stored profile, found in the team store
    assert same.run_id == 1 and same.reused
    again = _profile(reuse=False)
    assert again.run_id == 2  # another measurement, another file: another run
    plan = chainplan.plan(prof, budget="min")
    model, x = MODELS["vgg"]()
    y = torch.randint(0, 10, (x.shape[0],))
    chainplan.measure(plan.wrap(model), x, loss_fn=nn.CrossEntropyLoss(), target=y, steps=2)
    rows = chainplan.query(
        "SELECT plan_id, run_id, algo, executions, fits FROM plan_outcomes ORDER BY plan_id"
    ).to_pylist()
    assert rows == [{"plan_id": plan.plan_id, "run_id": 1, "algo": "rotor", "executions": 1,
                     "fits": rows[0]["fits"]}]
    (n,) = chainplan.query("SELECT count(*) AS n FROM stage_history WHERE run_id = 1").to_pylist()
    assert n["n"] == len(prof.stage_names) + 1  # the loss too
    assert [r["run_id"] for r in chainplan.history.runs()] == [2, 1]
    # A write through chainplan.query is refused by the database and changes nothing.
    for sql in ["DELETE FROM runs", "DROP TABLE measurements",
                "DO $$ BEGIN RESET ROLE; DELETE FROM runs; END $$"]:
        with pytest.raises(QueryError, match="read-only"):
            chainplan.query(sql)
    (row,) = chainplan.query("SELECT count(*) AS n, current_user AS who FROM runs").to_pylist()
    assert row == {"n": 2, "who": "chainplan_reader"}


def test_checkpointed_reuses_a_profile_from_postgres(team_store: str) -> None:
    """Checkpointed finds a stored profile of the same model in the team store (no new
    profile) and plans from it."""
    model, x = MODELS["vgg"]()
    target = torch.zeros(x.shape[0], dtype=torch.long)
    first = chainplan.Checkpointed(model, budget="min", loss_fn=nn.CrossEntropyLoss(),
                                   target=lambda t: target, repeats=2, warmup=1)
    first(x).sum().backward()
    (before,) = chainplan.query("SELECT count(*) AS n FROM runs").to_pylist()
    second = chainplan.Checkpointed(model, budget="min", loss_fn=nn.CrossEntropyLoss(),
                                    target=lambda t: target, repeats=2, warmup=1)
    second(x).sum().backward()
    (after,) = chainplan.query("SELECT count(*) AS n FROM runs").to_pylist()
    assert before["n"] == after["n"] == 1
