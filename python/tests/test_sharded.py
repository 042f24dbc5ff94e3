"""chainplan.sharded: a rank's memory besides activations, term by term (worked by hand),
and the refusals that come before any collective."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import InfeasibleBudget, PlanError
from chainplan.rankpeak import step_peak
from chainplan.shardchain import sharded_chain
from chainplan.sharded import RankPlan, plan_rank, rank_memory, unit_sizes

# A model of 1000 bytes of parameters: units of 300, 300 and 200, the root holds 200.
UNITS = [300, 300, 200]


def test_fsdp_terms() -> None:
    m = rank_memory(1000, world=4, units=UNITS)
    assert (m.strategy, m.shard, m.replicate) == ("fsdp", 4, 1)
    # A quarter of each: parameters, gradients, and AdamW's two moments.
    assert (m.params_bytes, m.grads_bytes, m.optimizer_bytes) == (250, 250, 500)
    # The root (200) beside the largest pair of consecutive units (300 + 300).
    assert m.gathered_bytes == 800
    # The largest unit's unsharded gradients and its reduce-scatter input.
    assert m.buffer_bytes == 600
    assert m.fixed_bytes == 2400
    assert m.activation_budget(10_000) == 7600


def test_reshard_after_forward_false_and_whole_step() -> None:
    kept = rank_memory(1000, world=4, units=UNITS, reshard_after_forward=False)
    assert (kept.gathered_bytes, kept.buffer_bytes, kept.fixed_bytes) == (1000, 600, 2600)
    # Composed under fully_shard: all gathered, all unsharded gradients until the end
    # (750 beyond the rank's 250 of sharded gradients: a unit's gradient is held unsharded
    # or sharded, never both), the largest unit's reduce-scatter input and output (300, 75).
    step = rank_memory(1000, world=4, units=UNITS, gathered="step")
    assert (step.gathered_bytes, step.buffer_bytes, step.fixed_bytes) == (1000, 1125, 3125)
    # Each stage a unit, counted in the chain (shardchain): the root and one prefetched.
    chain = rank_memory(1000, world=4, units=UNITS, gathered="chain")
    assert (chain.gathered_bytes, chain.buffer_bytes, chain.fixed_bytes) == (500, 0, 1500)
    # Gathered per stage (executors/fsdpstage.py): the root and the two largest units (the
    # backward's and a recomputation's), one unit's unsharded gradients and its copy.
    stage = rank_memory(1000, world=4, units=UNITS, gathered="stage")
    assert (stage.gathered_bytes, stage.buffer_bytes, stage.fixed_bytes) == (800, 600, 2400)


def test_hsdp_and_ddp() -> None:
    h = rank_memory(1000, world=4, shard=2, units=UNITS)
    assert (h.strategy, h.replicate) == ("hsdp", 2)
    assert (h.params_bytes, h.optimizer_bytes) == (500, 1000)
    assert h.buffer_bytes == 600 + 150  # and the all-reduce of the largest unit's shard
    d = rank_memory(1000, world=4, strategy="ddp", optimizer="sgd-momentum")
    assert (d.shard, d.fixed_bytes) == (1, 1000 + 1000 + 1000 + 1000)  # buckets: a copy
    assert rank_memory(1000, world=4, strategy="ddp", bucket_view=True).buffer_bytes == 0


def test_units_of_a_model() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    model[1].weight = nn.Parameter(model[0].weight[:2].detach().clone())
    assert unit_sizes(model, ["0"]) == {"0": 80, "": 8 * 4 + 2 * 4}
    assert rank_memory(model, world=2, units=["0"]).units == {"0": 80, "": 40}


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"world": 4, "shard": 3}, "shard must divide world=4"),
    ({"world": 0}, "world must be an integer ≥ 1"),
    ({"world": 4, "optimizer": "lion"}, "optimizer must be one of"),
    ({"world": 4, "strategy": "ddp", "shard": 2}, "does not shard over 2 of 4"),
    ({"world": 4, "gathered": "always"}, "gathered must be one of"),
    ({"world": 4, "units": [900, 300]}, "sum to at most 1000"),
])
def test_bad_input(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(PlanError, match=says):
        rank_memory(1000, **kwargs)  # type: ignore[arg-type]


def test_fixed_part_larger_than_the_device() -> None:
    with pytest.raises(InfeasibleBudget, match="holds 2400 bytes besides activations"):
        rank_memory(1000, world=4, units=UNITS).activation_budget("1KiB")


def test_plan_for_another_world_refused_before_wrapping() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
    prof = chainplan.profile(model, torch.randn(4, 8), repeats=1, warmup=0, progress=False)
    mem = rank_memory(model, world=2, units=[])
    rp = plan_rank(prof, memory=mem, device_bytes=mem.fixed_bytes + 10**6)
    # Its peak over the step: at most the sum of the largest terms and the plan's peak.
    assert isinstance(rp, RankPlan) and rp.peak_bytes == step_peak(mem, rp.plan, prof)
    assert rp.peak_bytes <= mem.fixed_bytes + rp.plan.peak_bytes
    with pytest.raises(PlanError, match="made for 2 data-parallel ranks, and this job has 1"):
        rp.wrap(model)
    assert rank_memory(model, world=1, units=[]).world == 1
    one = plan_rank(prof, memory=rank_memory(model, world=1, units=[]), device_bytes=10**7)
    out = one.wrap(model)(torch.randn(4, 8))
    assert out.shape == (4, 8)


def test_sharded_chain_counts_the_gathered_unit(tmp_path: Path) -> None:
    chain = {"format": "chainplan.chain/v2", "input_bytes": 64,
             "stages": [{"name": f"s{i}", "fwd_time": 1e-3, "bwd_time": 2e-3,
                         "out_bytes": 64, "saved_bytes": 128, "fwd_tmp_bytes": 0,
                         "bwd_tmp_bytes": 16, "param_bytes": 1000 * (i + 1),
                         "recompute_time": 1e-3, "recompute_tmp_bytes": 8}
                        for i in range(3)]}
    src = tmp_path / "plain.chain.json"
    src.write_text(json.dumps(chain))
    out = sharded_chain(src, tmp_path / "sharded.chain.json", shard=4, bandwidth=1e6)
    got = json.loads(out.read_text())["stages"][1]
    t = 2000 * 3 / 4 / 1e6  # three quarters of the unit come from the other ranks
    assert got["fwd_time"] == pytest.approx(1e-3 + t)
    assert got["recompute_time"] == pytest.approx(1e-3 + t)
    assert got["bwd_time"] == pytest.approx(2e-3 + 2 * t)  # gathered again, reduce-scattered
    assert (got["fwd_tmp_bytes"], got["recompute_tmp_bytes"]) == (2000, 2008)
    assert got["bwd_tmp_bytes"] == 16 + 3 * 2000
    # The planner counts it: a plan of the sharded chain peaks a gathered unit higher.
    plain = chainplan.plan(str(src), budget="min", algo="store-all")
    sharded = chainplan.plan(str(out), budget="min", algo="store-all")
    assert sharded.peak_bytes >= plain.peak_bytes + 3000
    unchanged = json.loads(sharded_chain(src, tmp_path / "one.json", shard=1).read_text())
    assert unchanged == chain
    del chain["stages"][0]["param_bytes"]
    src.write_text(json.dumps(chain))
    with pytest.raises(PlanError, match="stage 0 .s0. has no param_bytes"):
        sharded_chain(src, tmp_path / "x.json", shard=2)


def test_held_bytes_counts_a_shard_as_held_and_nothing_for_none() -> None:
    from chainplan.sharded import held_bytes

    class Shard:  # what a DTensor offers: its local part
        def __init__(self, local: torch.Tensor) -> None:
            self.local = local

        def to_local(self) -> torch.Tensor:
            return self.local

    tensors = [torch.zeros(3, 4), None, Shard(torch.zeros(2, dtype=torch.float64)),
               torch.zeros(5, dtype=torch.int8)]
    assert held_bytes(tensors) == 3 * 4 * 4 + 2 * 8 + 5


def test_stage_gathering_on_a_partial_hsdp_mesh_needs_its_group(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-stage gathering compares the ranks' plans within the group that shards the
    model: on an HSDP mesh over part of the world fully_shard makes no such group, and
    comparing over the whole world would wait for ranks holding other layers, so it is
    refused with what to do, unless a Checkpointed was given its group."""
    import torch.distributed as dist

    from chainplan.executors import fsdp

    class State:
        group = None

    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(fsdp, "fsdp_group", lambda model: None)
    with pytest.raises(PlanError, match=r"Checkpointed\(\.\.\., group=\)"):
        fsdp._plan_group(nn.Linear(2, 2), State())
    given = State()
    given.group = "the data-parallel group"
    assert fsdp._plan_group(nn.Linear(2, 2), given) == "the data-parallel group"
