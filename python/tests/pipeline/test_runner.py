"""The executor on real processes: gloo on the CPU, 2 and 4 ranks spawned on loopback.

Each world size is one session of spawned ranks that runs every scenario in turn (starting
processes is what costs); the tests assert on what each rank reported. Gradients and losses
are compared with one process running the same micro-batches (reference_step), over two
optimizer steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import chainplan
from chainplan.pipeline import pipeline_plan
from tests.pipeline import chains, session, workers
from tests.pipeline.plans import modulo_plan, plan_doc

# fp32 sums of four micro-batches in another order: differences of a few ulps.
TOL = 1e-6


def _sc(name: str, kind: str, plan: dict[str, Any], **options: Any) -> dict[str, Any]:
    layers = plan["stages"][-1]["last"]
    options.setdefault("microbatches", 4)
    return {"name": name, "kind": kind, "plan": plan, "options": dict(layers=layers, **options)}


IDLE = plan_doc(2, [0], [3], 3, [{"op": "F", "stage": 0, "start": 0, "duration": 1, "shift": 0},
                                 {"op": "B", "stage": 0, "start": 1, "duration": 2, "shift": 0}])
TWO = [
    _sc("shared", "compare", modulo_plan([0, 1, 1, 0], fwd=1, bwd=1, layers=[1, 2, 1, 1])),
    _sc("dropout", "compare", modulo_plan([0, 1, 1, 0], fwd=1, bwd=1), dropout=0.5, seed=3),
    _sc("contiguous", "compare", modulo_plan([0, 1])),
    _sc("gpipe", "compare", modulo_plan([0, 1]), schedule="gpipe"),
    _sc("swapped", "compare", modulo_plan([1, 0])),
    # Stage s on rank s mod 2: the runner compares the order with ScheduleInterleaved1F1B's.
    _sc("interleaved", "compare", modulo_plan([0, 1, 0, 1])),
    _sc("idle", "compare", IDLE, microbatches=2),
    _sc("errors", "errors", modulo_plan([0, 1, 1, 0])),
    _sc("measure", "measure", modulo_plan([0, 1, 1, 0]), microbatches=8),
    _sc("sends", "sends", modulo_plan([0, 1]), microbatches=8),
    # Last: it leaves the pipeline's process group broken.
    _sc("failure", "failure", modulo_plan([0, 1, 1, 0])),
]
FOUR = [
    _sc("special", "compare", modulo_plan([0, 1, 2, 3, 0], layers=[2, 1, 1, 1, 1])),
    _sc("wave", "compare", modulo_plan([0, 1, 2, 3, 3, 2, 1, 0]), dropout=0.3, seed=11),
    _sc("contiguous", "compare", modulo_plan([0, 1, 2, 3]), microbatches=6),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The sessions' database (the per-test one of conftest comes after module fixtures)."""
    path = tmp_path_factory.mktemp("db") / "chainplan.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHAINPLAN_DB", str(path))
        yield path


@pytest.fixture(scope="module")
def stored(db: Path) -> Any:
    """A contiguous plan of a profile of the workers' 4-layer chain, stored in ``db``."""
    x = torch.randn(2, 16)
    prof = chainplan.profile(workers.chain(4), x, loss_fn=workers.loss_fn, target=x,
                             spread_warning=None)
    return pipeline_plan(prof, gpus=2, memory="min", bandwidth="1GB/s", algo="contiguous",
                         microbatches=8)


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory, db: Path, stored: Any) -> list[dict[str, Any]]:
    record = {"name": "record", "kind": "measure", "plan": stored.raw, "plan_id": stored.plan_id,
              "layer_param_bytes": list(stored.layer_param_bytes),
              "options": {"layers": 4, "microbatches": 8, "store": True}}
    # The failure scenario stays last: it leaves the pipeline's process group broken.
    return session.run(2, TWO[:-1] + [record, TWO[-1]], tmp_path_factory.mktemp("two"), db)


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Go planners' plans of tests/pipeline/chains.py on four devices."""
    eight = chains.write(tmp_path_factory.mktemp("chain") / "eight.json")
    return {algo: pipeline_plan(eight, gpus=4, memory=mem, bandwidth=1e4, algo=algo,
                                time_limit_s=5, temporaries=False)
            for algo, mem in [("contiguous", 2500), ("pipedream", 4000), ("madpipe", 10000)]}


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory, db: Path,
         planned: dict[str, Any]) -> list[dict[str, Any]]:
    go = [_sc(f"go-{algo}", "compare", p.raw, microbatches=6) for algo, p in planned.items()]
    return session.run(4, FOUR + go, tmp_path_factory.mktemp("four"), db)


def _same_as_one_process(results: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    got = [r[name] for r in results]
    for rank, g in enumerate(got):
        assert "error" not in g, f"rank {rank}: {g['error']}\n{g.get('trace', '')}"
        assert g["grad_diff"] <= TOL, f"rank {rank}: gradients differ by {g['grad_diff']}"
        assert g["loss_diff"] <= TOL, f"rank {rank}: losses differ by {g['loss_diff']}"
    # Every parameter was compared on the rank that holds it.
    assert sum(g["grads"] for g in got) > 0
    return got


@pytest.mark.parametrize("name", ["shared", "dropout", "swapped", "idle", "interleaved"])
def test_plan_order_matches_one_process(two: list[dict[str, Any]], name: str) -> None:
    got = _same_as_one_process(two, name)
    assert got[0]["schedule"] == "plan"
    if name == "interleaved":  # compared, and said where it differs
        assert "where ScheduleInterleaved1F1B runs" in got[0]["reason"], got[0]["reason"]


def test_idle_rank_holds_nothing_and_gets_the_loss(two: list[dict[str, Any]]) -> None:
    # Three linear layers on rank 0, compared after each of two steps.
    assert two[1]["idle"]["grads"] == 0 and two[0]["idle"]["grads"] == 12


def test_builtin_schedules_where_the_plan_is_theirs(two: list[dict[str, Any]]) -> None:
    got = _same_as_one_process(two, "contiguous")
    assert got[0]["schedule"] == "Schedule1F1B"
    assert got[0]["reason"] == "every rank's order is Schedule1F1B's"
    got = _same_as_one_process(two, "gpipe")
    assert got[1]["schedule"] == "ScheduleGPipe"
    assert "stage 0 is on GPU 1" in two[0]["swapped"]["reason"]


def test_errors_before_any_rank_waits(two: list[dict[str, Any]]) -> None:
    for rank in (0, 1):
        got = two[rank]["errors"]
        assert got["world"] == ("PipelineError: the plan runs on 3 GPUs but the process group "
                                "has 2 ranks (launch 3 processes)")
        assert got["layers"].startswith("ScheduleError: the model has 5 layers")
        assert got["params"].startswith(
            "ScheduleError: layer 1 (_Block) has 1088 bytes of parameters but the profile")
        assert got["microbatches"].startswith("ScheduleError: microbatches: the plan was made")
        assert got["batch"] == ("ScheduleError: the batch (5 samples) does not split into 4 "
                                "equal micro-batches: use a batch size that is a multiple of 4")
        assert "after" in got  # the runner still works after the refusal


def test_measure_on_every_rank(two: list[dict[str, Any]]) -> None:
    a, b = two[0]["measure"], two[1]["measure"]
    assert "error" not in a, a.get("trace")
    assert a == b  # every rank gets the same execution
    assert a["ranks"] == [0, 1] and a["steps"] == 2 and a["ids"] == []
    assert a["step_time_s"] > 0 and 0 < a["microbatch_time_s"] < a["step_time_s"]
    # Each rank holds two 16×16 linear layers: 2 × 1088 bytes of weights, as many of
    # gradients, plus activations.
    assert all(p > 4 * 1088 for p in a["peaks"])


def test_failed_rank_is_named(two: list[dict[str, Any]]) -> None:
    # Stage 3 (rank 0) fails in its forward of micro-batch 2; rank 1 waits for it.
    failed, waiting = two[0]["failure"], two[1]["failure"]
    assert failed["type"] == "RuntimeError" and "failed to run forward" in failed["error"]
    assert waiting["type"] == "PipelineError"
    assert waiting["error"].startswith("rank 1 stopped in step 0 because rank 0 failed: "
                                       "ValueError in step 0: layer broke on purpose")


@pytest.mark.parametrize("name", ["special", "wave", "contiguous"])
def test_four_ranks_match_one_process(four: list[dict[str, Any]], name: str) -> None:
    got = _same_as_one_process(four, name)
    assert got[0]["schedule"] == ("Schedule1F1B" if name == "contiguous" else "plan")


@pytest.mark.parametrize("algo", ["contiguous", "pipedream", "madpipe"])
def test_go_planners_plans_match_one_process(four: list[dict[str, Any]],
                                             planned: dict[str, Any], algo: str) -> None:
    name = f"go-{algo}"
    _same_as_one_process(four, name)
    if algo == "contiguous":  # three stages on four devices: rank 3 idle
        assert planned[algo].stages_on(3) == () and four[3][name]["grads"] == 0
    if algo == "madpipe":  # a device holding two non-adjacent stages
        assert not planned[algo].contiguous and four[0][name]["schedule"] == "plan"


def test_execution_recorded_per_rank(two: list[dict[str, Any]], stored: Any, db: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    got = two[0]["record"]
    assert "error" not in got, got.get("trace")
    assert len(got["ids"]) == 2 and got == two[1]["record"]
    monkeypatch.setenv("CHAINPLAN_DB", str(db))
    rows = chainplan.query(
        f"SELECT step_time_s, peak_bytes, steps, json_extract(metadata_json, '$.rank') AS rank, "
        f"json_extract(metadata_json, '$.optimizer_step_time_s') AS opt "
        f"FROM executions WHERE plan_id = {stored.plan_id} ORDER BY rank").to_pylist()
    assert [r["rank"] for r in rows] == ["0", "1"] and all(r["steps"] == 2 for r in rows)
    assert rows[0]["peak_bytes"] == got["peaks"][0] and rows[1]["peak_bytes"] == got["peaks"][1]
    # step_time_s is the time per micro-batch, the period's counterpart; the step is 8 of them.
    assert rows[0]["step_time_s"] == pytest.approx(got["microbatch_time_s"])
    assert float(rows[0]["opt"]) == pytest.approx(got["step_time_s"])
    out = chainplan.query(f"SELECT executions, measured_peak_bytes, predicted_time_s, "
                          f"time_error FROM plan_outcomes WHERE plan_id = {stored.plan_id}"
                          ).to_pylist()[0]
    assert out["executions"] == 2 and out["measured_peak_bytes"] == max(got["peaks"])
    assert out["predicted_time_s"] == pytest.approx(stored.period)
    assert out["time_error"] == pytest.approx(got["microbatch_time_s"] / stored.period - 1)


def test_pending_sends_are_capped(two: list[dict[str, Any]]) -> None:
    got = two[0]["sends"]
    assert "error" not in got, got.get("trace")
    # Rank 1 sends the input gradient of each micro-batch back (2 × 16 floats, 128 bytes).
    # Torch's own placement waits for all eight at the end of the step; with at most two
    # pending (forward sends count too), five of them were gone at the peak when measured.
    assert got["None"][1] - got["2"][1] >= 4 * 128, got
