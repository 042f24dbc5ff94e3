"""examples/pipeline_train.py, the pipeline example the docs point to, trains under torchrun
on the CPU (two processes, gloo) and records its executions (issue 13's "Done when")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import chainplan

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "pipeline_train.py"


def test_example_trains_under_torchrun() -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(SCRIPT), "--algo", "contiguous", "--steps", "2", "--width", "32", "--layers", "3",
         "--microbatches", "4"],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "step 0: loss" in out and "step 1: loss" in out, out
    assert "rank 1: peak" in out and "recorded as executions" in out, out
    rows = chainplan.query("SELECT plan_id, count(*) AS n FROM executions GROUP BY plan_id"
                           ).to_pylist()
    assert [r["n"] for r in rows] == [2], rows  # one execution row per rank
