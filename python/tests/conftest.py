"""Shared fixtures: a fixed seed for every test, a private database, and a report header."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch


def pytest_report_header(config: pytest.Config) -> str:
    import pyarrow

    return (f"torch {torch.__version__}, pyarrow {pyarrow.__version__}, "
            f"threads {torch.get_num_threads()}")


@pytest.fixture(autouse=True)
def manual_seed_zero() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def private_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own database, never the user's ~/.chainplan one."""
    db = tmp_path / "chainplan.db"
    monkeypatch.setenv("CHAINPLAN_DB", str(db))
    yield db


def pytest_configure(config: pytest.Config) -> None:
    # Two threads: the CI machine has two cores, and fewer threads make timings steadier.
    torch.set_num_threads(int(os.environ.get("CHAINPLAN_TEST_THREADS", "2")))
