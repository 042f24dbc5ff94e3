"""Spawn the ranks of a launch test (gloo, loopback) and collect what each reported."""

from __future__ import annotations

import json
import multiprocessing
import socket
import time
from pathlib import Path
from typing import Any

import torch.multiprocessing as mp

from tests.launch import workers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(world: int, spec: dict[str, Any], tmp: Path,
        wait_s: float = 120.0) -> list[dict[str, Any] | None]:
    """Run ``spec`` (``{"kind", "options"}``) on ``world`` ranks; each rank's report, None
    for a rank that wrote none (it died). Fails when a rank is still running after
    ``wait_s``."""
    path = tmp / "spec.json"
    path.write_text(json.dumps(spec))
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed.pipelining", "tests.launch.workers"])
    procs = mp.start_processes(workers.run_rank, args=(world, _free_port(), str(path), str(tmp)),
                               nprocs=world, start_method="forkserver", join=False)
    deadline = time.monotonic() + wait_s
    for p in procs.processes:
        p.join(max(0.0, deadline - time.monotonic()))
    alive = [r for r, p in enumerate(procs.processes) if p.is_alive()]
    for p in procs.processes:
        if p.is_alive():
            p.kill()
    assert not alive, f"ranks {alive} still running after {wait_s:g} s (a hang)"
    out: list[dict[str, Any] | None] = []
    for r in range(world):
        f = tmp / f"rank{r}.json"
        out.append(json.loads(f.read_text()) if f.exists() else None)
    return out
