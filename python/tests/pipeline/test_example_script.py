"""examples/pipeline_train.py, the pipeline example the docs point to, trains under torchrun
on the CPU (two processes, gloo), records its executions (issue 13's "Done when"), plans by
default where the pipeline is faster than one device, keeps every rank within the plan's
memory, and on a second launch plans from the stored profile and gets the same plan back
(issue 21)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import chainplan

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "pipeline_train.py"


def _launch(tmp: Path) -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(SCRIPT), "--algo", "contiguous", "--steps", "2", "--width", "32", "--layers", "3",
         "--microbatches", "4"],
        capture_output=True, text=True, env=env, timeout=300, check=False, cwd=tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_example_trains_under_torchrun(tmp_path: Path) -> None:
    out = _launch(tmp_path)  # from another directory than the repository's
    assert "step 0: loss" in out and "step 1: loss" in out, out
    assert "rank 1: peak" in out and "recorded as executions" in out, out
    assert "peak memory within the plan's" in out, out
    speedup = re.search(r"\((\d+\.\d+)x the throughput of one device", out)
    assert speedup and float(speedup[1]) > 1, out  # --memory faster, the default
    rows = chainplan.query("SELECT plan_id, count(*) AS n FROM executions GROUP BY plan_id"
                           ).to_pylist()
    assert [r["n"] for r in rows] == [2], rows  # one execution row per rank
    again = _launch(tmp_path)
    assert "planning from the stored profile of run" in again, again
    assert "reused plan" in again, again
    assert re.search(r"plan (\d+):", out)[1] == re.search(r"plan (\d+):", again)[1]  # type: ignore[index]
    rows = chainplan.query("SELECT count(*) AS n FROM runs").to_pylist()
    assert rows == [{"n": 1}], rows  # profiled once
