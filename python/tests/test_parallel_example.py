"""examples/parallel/train.py under torchrun on two CPU processes: rank 0 profiles the
model, search3d picks a candidate on a two-device cluster, every rank builds it with
chainplan.parallelize, trains, measures, and the measurement lands in the stored advice
(``chainplan advice accuracy`` lists it) without the user typing anything."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "parallel" / "train.py"
CLI = Path(sys.executable).parent / "chainplan"
CLUSTER = """format: chainplan.cluster/v1
name: cpu-2
nodes:
  - {name: host, count: 1, gpu: cpu, gpus: 2, gpu_mem: 2e9, intra_bw_gbps: 10, inter_bw_gbps: 10}
latency: {intra_s: 0, inter_s: 0}
contention: {inter_node_shared_nic_flows: none}
"""


def test_search_launch_measure_record(tmp_path: Path) -> None:
    (tmp_path / "cpu-2.yaml").write_text(CLUSTER)
    db, out = tmp_path / "advice.db", tmp_path / "measured.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(SCRIPT), "--cluster", "cpu-2.yaml", "--global-batch", "4", "--microbatch", "2",
         "--width", "32", "--layers", "2", "--steps", "2", "--record", str(db),
         "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=300, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(out.read_text())
    mesh = got["candidate"]["mesh"]
    assert mesh["pp"] * mesh["dp"] * mesh["tp"] == 2, got
    assert got["iteration_time_s"] > 0 and got["iterations"] == 2
    assert len(got["peak_bytes"]) == 2 and min(got["peak_bytes"]) > 0, got
    assert got["measurement_id"] >= 1 and got["advice_id"] >= 1, got
    acc = subprocess.run([str(CLI), "--db", str(db), "advice",
                          "accuracy", str(got["advice_id"]), "--format", "json"],
                         capture_output=True, text=True, timeout=60, check=True)
    rows = json.loads(acc.stdout)["candidates"]
    assert [r["runs"] for r in rows] == [1], rows
    assert abs(rows[0]["measured_iteration_time_s"] - got["iteration_time_s"]) < 1e-9, rows
    with sqlite3.connect(db) as con:  # every rank's peak, the largest as the run's
        peak, meta = con.execute("SELECT peak_bytes, metadata_json FROM advice_measurements "
                                 "WHERE measurement_id = ?", (got["measurement_id"],)).fetchone()
    assert json.loads(meta)["peak_bytes_per_rank"] == got["peak_bytes"], meta
    assert peak == max(got["peak_bytes"])


def test_checkpointed_under_fsdp_within_memory(tmp_path: Path) -> None:
    """By flags: the example's nn.Sequential checkpointed by chainplan under FSDP2, each rank
    planned within ``--memory`` less its sharded state and buffers (a plan per rank,
    profiled at the first forward, outside the launch's memory probes); every rank's
    measured peak within its planned peak (+2 %), and that within the memory."""
    out = tmp_path / "measured.json"
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(SCRIPT), "--dp", "2", "--memory", "1MiB", "--data-parallel", "fsdp",
         "--microbatch", "2", "--width", "32", "--layers", "2", "--steps", "1",
         "--json", str(out)],
        capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=300,
        check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(out.read_text())
    cand = got["candidate"]
    assert cand["memory"] == "1MiB" and cand["checkpoint"] == [None], cand
    assert cand["mesh"]["dp"] == 2
    assert len(got["peak_bytes"]) == 2 and min(got["peak_bytes"]) > 0, got
    for peak, planned in zip(got["peak_bytes"], got["planned_bytes"], strict=True):
        assert 0 < planned <= 1 << 20, got
        assert peak <= 1.02 * planned, got
    assert got["losses"][-1] < got["losses"][0], got["losses"]


def test_refuses_a_candidate_for_another_world_size(tmp_path: Path) -> None:
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps({"mesh": {"dp": 2, "tp": 2}, "microbatch": 2}))
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(SCRIPT), "--candidate", str(cand), "--width", "32", "--layers", "2"],
        capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=120,
        check=False, cwd=tmp_path)
    assert done.returncode != 0
    assert "holds 4 processes but the process group has 2" in done.stderr, done.stderr[-2000:]
