"""The executor on real processes: gloo on the CPU, 2 and 4 ranks spawned on loopback.

Each world size is one session of spawned ranks that runs every scenario in turn (starting
processes is what costs); the tests assert on what each rank reported. Gradients and losses
are compared with one process running the same micro-batches (reference_step), over two
optimizer steps.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.pipeline import session
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
    _sc("idle", "compare", IDLE, microbatches=2),
    _sc("errors", "errors", modulo_plan([0, 1, 1, 0])),
    _sc("measure", "measure", modulo_plan([0, 1, 1, 0]), microbatches=8),
    # Last: it leaves the pipeline's process group broken.
    _sc("failure", "failure", modulo_plan([0, 1, 1, 0])),
]
FOUR = [
    _sc("special", "compare", modulo_plan([0, 1, 2, 3, 0], layers=[2, 1, 1, 1, 1])),
    _sc("wave", "compare", modulo_plan([0, 1, 2, 3, 3, 2, 1, 0]), dropout=0.3, seed=11),
    _sc("contiguous", "compare", modulo_plan([0, 1, 2, 3]), microbatches=6),
]


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return session.run(2, TWO, tmp_path_factory.mktemp("two"))


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return session.run(4, FOUR, tmp_path_factory.mktemp("four"))


def _same_as_one_process(results: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    got = [r[name] for r in results]
    for rank, g in enumerate(got):
        assert "error" not in g, f"rank {rank}: {g['error']}\n{g.get('trace', '')}"
        assert g["grad_diff"] <= TOL, f"rank {rank}: gradients differ by {g['grad_diff']}"
        assert g["loss_diff"] <= TOL, f"rank {rank}: losses differ by {g['loss_diff']}"
    # Every parameter was compared on the rank that holds it.
    assert sum(g["grads"] for g in got) > 0
    return got


@pytest.mark.parametrize("name", ["shared", "dropout", "swapped", "idle"])
def test_plan_order_matches_one_process(two: list[dict[str, Any]], name: str) -> None:
    got = _same_as_one_process(two, name)
    assert got[0]["schedule"] == "plan"


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
