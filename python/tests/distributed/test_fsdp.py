"""chainplan's plans under FSDP2 and DDP on two gloo ranks (issue 34, points 1, 2(b), 4).

Each case trains the GPT with a ``ModuleList`` for three AdamW steps, each rank on half the
global batch, and compares with one process on the whole batch: the loss (averaged over the
ranks) within 1e-5, every parameter within 2e-4. The tolerance is the reduction order's:
FSDP2 alone, without chainplan, differs from one process by 5.5e-5 (the attention's key bias,
whose gradient is rounding noise that Adam normalizes), and each case must not differ more
than plain FSDP2 does (+1e-6). Every rank's measured peak (its sharded parameters and
optimizer state, plus the CPU allocator's peak over the last step) is within its planned
memory (``chainplan.sharded``'s fixed part plus the plan's activation peak) +2 %.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.distributed import session

LOSS_TOL, PARAM_TOL = 1e-5, 2e-4


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The user wrapped the model: Checkpointed, then fully_shard (torchtitan's order), or
    fully_shard then Checkpointed; DDP(Checkpointed); a refused MixedPrecisionPolicy; and
    plain FSDP2, the baseline."""
    scenarios = [{"name": k, "kind": k}
                 for k in ("plain_fsdp", "checkpointed_fsdp", "ddp_checkpointed",
                           "mixed_precision")]
    scenarios.append({"name": "shard_first", "kind": "checkpointed_fsdp",
                      "options": {"shard_first": True}})
    scenarios.append({"name": "grouped", "kind": "mixed_precision",
                      "options": {"grouped": True}})
    return session.run(2, scenarios, tmp_path_factory.mktemp("wrapped"))


@pytest.fixture(scope="module")
def per_rank(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """A plan per rank (chainplan.sharded.plan_rank) under FSDP2, and plans made for
    another job."""
    scenarios = [{"name": "plain_fsdp", "kind": "plain_fsdp"},
                 {"name": "rank_plan", "kind": "rank_plan"},
                 {"name": "world4", "kind": "refused", "options": {"world": 4}},
                 {"name": "shard1", "kind": "refused", "options": {"shard": 1}},
                 {"name": "plain_chain_fsdp", "kind": "plain_chain_fsdp"},
                 {"name": "sequential_fsdp", "kind": "sequential_fsdp"}]
    return session.run(2, scenarios, tmp_path_factory.mktemp("per_rank"))


@pytest.fixture(scope="module")
def per_stage(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """One plan shared by the ranks of a 4-block GPT, its FSDP units gathered per stage or
    for the whole step; and ranks running different plans per stage (refused)."""
    scenarios = [{"name": "plain_fsdp", "kind": "plain_fsdp", "options": {"blocks": 4}},
                 {"name": "stage", "kind": "shared_plan"},
                 {"name": "step", "kind": "shared_plan", "options": {"gathered": "step"}},
                 {"name": "differ", "kind": "shared_plan", "options": {"differ": True}},
                 {"name": "own_mesh", "kind": "own_mesh_plans"}]
    return session.run(2, scenarios, tmp_path_factory.mktemp("per_stage"))


def _ok(results: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    got = [r[name] for r in results]
    for rank, g in enumerate(got):
        assert "error" not in g, f"rank {rank}: {g.get('error')}\n{g.get('trace')}"
    return got


def _same_training(results: list[dict[str, Any]], name: str,
                   baseline: str = "plain_fsdp") -> None:
    base = _ok(results, baseline)
    for rank, (g, b) in enumerate(zip(_ok(results, name), base, strict=True)):
        assert g["loss_diff"] <= LOSS_TOL, (rank, g)
        assert g["param_diff"] <= PARAM_TOL, (rank, g)
        assert g["param_diff"] <= b["param_diff"] + 1e-6, (rank, g, b)


def _within_plan(results: list[dict[str, Any]], name: str) -> None:
    for rank, g in enumerate(_ok(results, name)):
        assert 0 < g["measured"] <= 1.02 * g["planned"], (rank, g)


def test_checkpointed_then_fully_shard_trains_as_fsdp2(wrapped: list[dict[str, Any]]) -> None:
    # Before: CaptureError: torch.export cannot capture GPT.forward (DTensor parameters).
    _same_training(wrapped, "checkpointed_fsdp")
    _within_plan(wrapped, "checkpointed_fsdp")


def test_fully_shard_then_checkpointed_trains_as_fsdp2(wrapped: list[dict[str, Any]]) -> None:
    # The other order: the model sharded first, then Checkpointed (the same CaptureError).
    _same_training(wrapped, "shard_first")
    _within_plan(wrapped, "shard_first")


def test_ddp_of_checkpointed_trains_as_one_process(wrapped: list[dict[str, Any]]) -> None:
    _same_training(wrapped, "ddp_checkpointed")
    _within_plan(wrapped, "ddp_checkpointed")  # gradients: views of its buckets


def test_plan_per_rank_under_fsdp2(per_rank: list[dict[str, Any]]) -> None:
    _same_training(per_rank, "rank_plan")
    _within_plan(per_rank, "rank_plan")


def test_chain_of_units_gathers_per_stage(per_rank: list[dict[str, Any]]) -> None:
    """An nn.Sequential whose stages are FSDP units: FSDP2's own hooks gather each stage when
    the plan runs it; the plan is made on chainplan.shardchain's chain (the gathered unit in
    each stage's working memory, the all-gather in its times), within the device less
    rank_memory(gathered="chain")'s fixed part."""
    _same_training(per_rank, "sequential_fsdp", "plain_chain_fsdp")
    _within_plan(per_rank, "sequential_fsdp")
    for rank, (g, b) in enumerate(zip(_ok(per_rank, "sequential_fsdp"),
                                      _ok(per_rank, "plain_chain_fsdp"), strict=True)):
        assert g["recomputed"], (rank, g)  # the plan recomputes: gathers are at stake
        # The chain counts an all-gather for every forward, recomputations included: an
        # upper bound of what FSDP2 gathered (it gathers at least what it does alone).
        backward = g["sequence"][g["sequence"].index(next(
            op for op in g["sequence"] if op.startswith("B"))):]
        extra = sum(op.startswith("F") for op in backward)
        assert b["gathers"] <= g["gathers"] <= b["gathers"] + extra, (rank, g, b)


@pytest.mark.parametrize(("name", "says"), [
    ("world4", "made for 4 data-parallel ranks, and this job has 2"),
    ("shard1", "shards parameters over 1 ranks, and fully_shard shards them over 2"),
])
def test_plan_for_another_job_is_refused(per_rank: list[dict[str, Any]], name: str,
                                         says: str) -> None:
    for rank, r in enumerate(per_rank):
        assert says in r[name]["refused"], (rank, r[name])
        assert r[name]["alive"] == 2.0, (rank, r[name])  # no rank left in a collective


@pytest.mark.parametrize(("name", "says"), [
    ("mixed_precision", "MixedPrecisionPolicy is not supported"),
    ("grouped", "a group of modules sharded together"),
])
def test_unsupported_sharding_is_refused(wrapped: list[dict[str, Any]], name: str,
                                         says: str) -> None:
    for rank, r in enumerate(wrapped):
        got = r[name]
        assert "PlanError" in got["refused"] and says in got["refused"], (rank, got)
        assert got["alive"] == 2.0, (rank, got)


def test_units_gathered_per_stage(per_stage: list[dict[str, Any]]) -> None:
    """gathered="stage": the plan (recomputing) trains as FSDP2 alone, within its planned
    memory (rank_memory(gathered="stage")), below the same plan with every unit gathered
    for the step, and gathers units per stage (more all-gathers than units), the forward's
    a stage ahead."""
    _same_training(per_stage, "stage")
    _within_plan(per_stage, "stage")
    _within_plan(per_stage, "step")
    for rank, (g, s) in enumerate(zip(_ok(per_stage, "stage"), _ok(per_stage, "step"),
                                      strict=True)):
        # It recomputes: whole stages, or parts of stages (rotor-ops' options; which,
        # depends on the profile's measured times).
        assert g["recomputed"] or g["options"], (rank, g)
        # Two of the four blocks at most are gathered at once (step: all four, and all
        # their unsharded gradients): the plan counts at least one block less, and the
        # measured peak is lower. The CPU peaks vary by up to two blocks from run to run
        # (measured: 708 376-807 128 per stage, 899 928-1 001 560 per step), so the
        # measured margin asserted is none, where the planned one is exact.
        assert g["planned"] + g["block_bytes"] <= s["planned"], (rank, g, s)
        assert g["measured"] < s["measured"], (rank, g, s)
        # Planned over the step (chainplan.rankpeak): never above the sum of maxima.
        assert g["planned"] <= g["summed"], (rank, g)
        assert g["gathers"] > s["gathers"], (rank, g, s)
        # The forward prefetches the next stage's block (fsdpstage.py): one per block
        # boundary of the forward at least, none gathering for the whole step.
        assert g["ahead"] - g["ahead_backward"] >= 3 and s["ahead"] == 0, (rank, g, s)
        # The backward prefetches the next backward's block (the plan's sequence says
        # which): at least one per block boundary the plan crosses without recomputing.
        assert g["ahead_backward"] >= 2, (rank, g, s)


def test_plans_compared_within_the_sharding_group(per_stage: list[dict[str, Any]]) -> None:
    """Ranks sharding their own models (each on a mesh of its own, as pipeline stages do)
    run different plans per stage: compared only within each group, neither is refused.
    Rank 0's smallest plan recomputes runs of stages, which per-stage gathering must run
    stage by stage (a recomputation region calls its stages past the hooks that gather
    their units: it failed on the sharded parameters)."""
    got = _ok(per_stage, "own_mesh")
    assert all(g["ran"] for g in got), got
    assert [g["recomputes"] for g in got] == [True, False], got


def test_different_plans_per_stage_are_refused(per_stage: list[dict[str, Any]]) -> None:
    for rank, r in enumerate(per_stage):
        got = r["differ"]
        assert "PlanError" in got["refused"] and "same plan on every rank" in got["refused"], \
            (rank, got)
        assert got["alive"] == 2.0, (rank, got)
