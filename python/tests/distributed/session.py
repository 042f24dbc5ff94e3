"""Run the data-parallel scenarios on spawned gloo ranks and collect what each rank reported."""

from __future__ import annotations

import json
import multiprocessing
import socket
from pathlib import Path
from typing import Any

import torch.multiprocessing as mp

from tests.distributed import workers

__all__ = ["run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(world: int, scenarios: list[dict[str, Any]], tmp: Path, *,
        module: str = "tests.distributed.workers",
        timeout_s: float | None = None) -> list[dict[str, Any]]:
    """Run ``scenarios`` (``{"name", "kind", "options"}``, kinds of ``module``'s ``KINDS``)
    on ``world`` ranks, each with its own database under ``tmp/rank<r>``; return each rank's
    results by scenario name. ``timeout_s``: the process group's (a collective a rank waits
    in alone then fails the test rather than hanging it; default: torch's)."""
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"scenarios": scenarios, "module": module,
                                "timeout_s": timeout_s}))
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed.fsdp", "tests.distributed.workers"])
    mp.start_processes(workers.run_session, args=(world, _free_port(), str(spec), str(tmp)),
                       nprocs=world, start_method="forkserver")
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(world)]
