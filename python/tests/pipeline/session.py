"""Run scenarios in spawned ranks (gloo, loopback) and collect what each rank reported."""

from __future__ import annotations

import json
import multiprocessing
import socket
from pathlib import Path
from typing import Any

import torch.multiprocessing as mp

from tests.pipeline import workers

__all__ = ["run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(world: int, scenarios: list[dict[str, Any]], tmp: Path,
        db: Path | None = None) -> list[dict[str, Any]]:
    """Run ``scenarios`` (``{"name", "kind", "plan", "options"}``) on ``world`` ranks, with
    ``db`` as their database (default: one in ``tmp``).

    Returns:
        Each rank's results, by scenario name.
    """
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"db": str(db or tmp / "chainplan.db"), "scenarios": scenarios}))
    # A fork server that has imported torch and the workers once starts each rank in a
    # fraction of the time a fresh interpreter takes to import torch.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed.pipelining", "tests.pipeline.workers",
                                "chainplan.pipeline.runner"])
    mp.start_processes(workers.run_session, args=(world, _free_port(), str(spec), str(tmp)),
                       nprocs=world, start_method="forkserver")
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(world)]
