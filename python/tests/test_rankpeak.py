"""chainplan.rankpeak: a rank's planned peak as a maximum over the step (worked by hand on
a three-stage chain), the units each stage reads, and plan_rank's search for the largest
activation budget whose step peak fits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import chainplan
from chainplan.errors import InfeasibleBudget, PlanError
from chainplan.rankpeak import stage_units, step_peak
from chainplan.sharded import plan_rank, rank_memory

# Three stages reading 300, 300 and 400 bytes of parameters; each keeps 2000 bytes for its
# backward and outputs 1000 (the loss is stage 4).
CHAIN = {"format": "chainplan.chain/v2", "input_bytes": 1000,
         "stages": [{"name": f"s{i}", "fwd_time": 1e-3, "bwd_time": 2e-3, "out_bytes": 1000,
                     "saved_bytes": 2000, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0,
                     "param_bytes": pb} for i, pb in enumerate([300, 300, 400])]}
# Stage 1 reads unit0 (300 bytes), stage 2 unit1 (300), stage 3 the root (400: a head).
READS = [frozenset({"unit0"}), frozenset({"unit1"}), frozenset()]


@pytest.fixture
def store_all(tmp_path: Path) -> tuple[Path, chainplan.Plan]:
    src = tmp_path / "chain.json"
    src.write_text(json.dumps(CHAIN))
    return src, chainplan.plan(str(src), budget="min", algo="store-all")


def test_step_peak_worked_by_hand(store_all: tuple[Path, chainplan.Plan]) -> None:
    src, plan = store_all
    # The replay (the Go simulator's trace): B3 finds 8000 bytes and needs 9000.
    assert plan.peak_bytes == 9000
    mem = rank_memory(1000, world=2, units=[300, 300], gathered="stage")
    # The sum of maxima: 500 + 500 + 1000 (sharded state) + 400 + 300 + 300 (root and
    # two units) + 2 x 400 (buffers) = 3800, + 9000.
    assert mem.fixed_bytes + plan.peak_bytes == 12800
    # Over the step the rank peaks at B3, the backward's start: the sharded parameters
    # and AdamW state (1500), the root gathered (400, stage 3 reads no unit), unit1
    # prefetched for B2, the next backward (300), the root's gradients (400: stages 3..
    # read 400 bytes), no unit reduce-scattered yet, the collective buffers released late
    # (two units and a root shard: 800), and B3's 9000.
    assert step_peak(mem, plan, src, READS) == 1500 + 400 + 300 + 400 + 800 + 9000
    # Without the units per stage the bound is coarse, above the sum of maxima: that one.
    assert step_peak(mem, plan, src) == 12800
    ddp = rank_memory(1000, world=2, strategy="ddp")
    assert step_peak(ddp, plan, src, READS) == ddp.fixed_bytes + plan.peak_bytes


def test_step_peak_gathered_for_the_step(store_all: tuple[Path, chainplan.Plan]) -> None:
    src, plan = store_all
    mem = rank_memory(1000, world=2, units=[300, 300], gathered="step")
    # Reduce-scattered at the end, every unit gathered throughout (1000): at B3 the rank
    # holds its state (1500), the gradients of stage 3's parameters (400), the late
    # collective buffers (800) and B3's 9000; the sum of maxima is 4100 + 9000.
    assert step_peak(mem, plan, src) == 1500 + 1000 + 400 + 800 + 9000
    assert mem.fixed_bytes + plan.peak_bytes == 13100


def test_step_peak_counts_the_gradients_earlier_microbatches_accumulated(
        store_all: tuple[Path, chainplan.Plan]) -> None:
    """With 2 micro-batches every micro-batch reduce-scatters (parallelize's step): the
    first one's sharded gradients (500, one share) are held at every operation of the
    second, in the fixed part and in the step's peak; DDP accumulates in .grad, counted."""
    src, plan = store_all
    one = rank_memory(1000, world=2, units=[300, 300], gathered="step")
    two = rank_memory(1000, world=2, units=[300, 300], gathered="step", microbatches=2)
    assert (two.accumulated_bytes, two.fixed_bytes) == (500, one.fixed_bytes + 500)
    assert step_peak(two, plan, src) == step_peak(one, plan, src) + 500
    assert "gradients accumulated over 2 micro-batches 500" in two.terms()
    per_unit = rank_memory(1000, world=2, units=[300, 300], microbatches=2)
    assert per_unit.accumulated_bytes == 0  # its share counts through the step already
    ddp = rank_memory(1000, world=2, strategy="ddp", microbatches=2)
    assert ddp.fixed_bytes == rank_memory(1000, world=2, strategy="ddp").fixed_bytes
    with pytest.raises(PlanError, match="microbatches must be an integer"):
        rank_memory(1000, world=2, microbatches=0)


def _gpt() -> tuple[nn.Module, chainplan.Profile]:
    from tests.graph.models import GPT

    # Activations well above the parameters (bench/fsdp's proportions): a batch of 8
    # sequences of 64 tokens.
    torch.manual_seed(0)
    model = GPT(blocks=2, seq=64)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    idx = torch.randint(0, 256, (8, 64))
    mask = torch.ones(64, 64, dtype=torch.bool).tril()
    prof = chainplan.profile(model, idx, loss_fn=F.cross_entropy, target=idx.flatten(),
                             repeats=1, warmup=0, progress=False, spread_warning=None,
                             mask=mask)
    return model, prof


def test_stage_units_and_plan_rank_below_the_sum_of_maxima() -> None:
    model, prof = _gpt()
    mem = rank_memory(model, world=2, gathered="stage", units=["blocks.0", "blocks.1"])
    reads = stage_units(prof, mem.units)
    assert reads is not None and len(reads) == prof.num_stages
    # Every block's stages read their block and nothing else; the embeddings and the head
    # read the root's parameters only.
    for names, got in zip(prof.stage_names, reads, strict=True):
        want = {u for u in ("blocks.0", "blocks.1") if u in names}
        assert got == want, (names, got)
    smallest = chainplan.plan(prof, budget="min")
    peak = step_peak(mem, smallest, prof, reads)
    assert peak < mem.fixed_bytes + smallest.peak_bytes
    # At the smallest plan's step peak, the sum of maxima leaves less than its activation
    # peak: planned that way, no plan fits. Planned over the step, one does.
    with pytest.raises(InfeasibleBudget):
        chainplan.plan(prof, budget=mem.activation_budget(peak))
    rp = plan_rank(prof, memory=mem, device_bytes=peak)
    assert rp.peak_bytes <= peak and rp.peak_bytes == step_peak(mem, rp.plan, prof, reads)
    with pytest.raises(InfeasibleBudget, match="no plan of this rank fits"):
        plan_rank(prof, memory=mem, device_bytes=peak - 4096 - peak // 20)
