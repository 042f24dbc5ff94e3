"""End to end: profile → Arrow file → database → plan → execute → execution row → query."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pyarrow.ipc as ipc
import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import ArgumentTypeError, NotFoundError, PlanError, ProfileError, QueryError
from chainplan.executors import planned
from tests.models import MODELS

# Bytes of the CPU generator's state (torch.get_rng_state()), which the executor keeps for
# each recomputed stage that draws random numbers: not part of the activation model.
RNG_STATE_BYTES = torch.get_rng_state().numel()
# What a step holds besides the modeled tensors: a few scalars (the loss value and its
# gradient seed; 8 B here) and the one-element placeholders between the backward steps.
SLACK_BYTES = 256


def profiled(name: str) -> tuple[nn.Sequential, torch.Tensor, torch.Tensor, chainplan.Profile]:
    model, x = MODELS[name]()
    y = torch.randint(0, 10, (x.shape[0],))
    prof = chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=3,
                             warmup=1, progress=False)
    return model, x, y, prof


def test_round_trip(private_db: Path) -> None:
    model, x, y, prof = profiled("vgg")
    assert prof.run_id == 1 and prof.path.exists()
    table = ipc.open_file(str(prof.path)).read_all()
    assert table.schema.metadata[b"format"] == b"chainplan.profile/v1"
    assert table.num_rows == 3 * (len(prof.stage_names) + 1)

    ce = nn.CrossEntropyLoss()
    ref = copy.deepcopy(model)
    ce(ref(x), y).backward()
    p = chainplan.plan(prof, budget="min")
    assert p.plan_id is not None and p.run_id == 1 and p.algo == "rotor"
    net = p.wrap(model)
    ce(net(x), y).backward()
    for a, b in zip(ref.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6)

    ex = chainplan.measure(net, x, loss_fn=ce, target=y, steps=2)
    assert ex.execution_id is not None and ex.step_time_s > 0
    rows = chainplan.query(
        "SELECT p.plan_id, p.peak_bytes AS predicted_peak_bytes, e.peak_bytes, e.step_time_s "
        "FROM executions e JOIN plans p USING (plan_id)").to_pylist()
    assert len(rows) == 1
    assert rows[0]["plan_id"] == p.plan_id
    assert rows[0]["peak_bytes"] == ex.peak_bytes
    assert rows[0]["predicted_peak_bytes"] == p.peak_bytes
    runs = chainplan.query("SELECT run_id, model_name, torch_version FROM runs").to_pylist()
    assert runs == [{"run_id": 1, "model_name": "Sequential", "torch_version": torch.__version__}]
    (listed,) = chainplan.history.runs()
    assert listed["run_id"] == 1 and listed["num_stages"] == len(prof.stage_names)
    # The same file ingested again is stored once.
    from chainplan import _bind

    assert _bind.ingest(str(prof.path)) == 1

    # The profile's file is a source too (the file chainplan.profile writes): the same
    # plan, not a chain file that fails to decode as text.
    by_file = chainplan.plan(str(prof.path), budget="min")
    assert by_file.sequence == p.sequence and by_file.peak_bytes == p.peak_bytes
    assert by_file.plan_id is None and by_file.run_id is None


@pytest.mark.parametrize("name", sorted(MODELS))
def test_measured_peak_within_budget(name: str) -> None:
    """The measured peak of each plan stays within its budget (up to the RNG states of
    recomputed random stages and a few scalars) and falls with the budget; without
    recomputation it matches the prediction."""
    model, x, y, prof = profiled(name)
    ce = nn.CrossEntropyLoss()
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    lo = chainplan.plan(prof, budget="min").budget_bytes
    peaks = []
    for budget in (hi, (hi + lo) // 2, lo):
        p = chainplan.plan(prof, budget=budget)
        net = p.wrap(model)
        ex = chainplan.measure(net, x, loss_fn=ce, target=y, steps=1)
        extra = RNG_STATE_BYTES * len(planned(net).executor(x).recomputed) + SLACK_BYTES  # type: ignore[union-attr]
        assert ex.peak_bytes <= budget + extra, (budget, ex)
        # The model may over-estimate: a stage output that no operation saves is counted
        # until its backward step (ā ≥ a) but freed when the step starts, and a cut that
        # neither side saves (BatchNorm | ReLU) is freed after the next stage's forward
        # (chainplan.executors.inputrelease); on this VGG both together are a quarter of
        # the store-all peak.
        assert ex.peak_bytes >= 0.7 * p.peak_bytes, (budget, ex)
        peaks.append(ex.peak_bytes)
        model.zero_grad(set_to_none=True)
    assert peaks[0] > peaks[1] > peaks[2], peaks


def test_record_over_training_steps() -> None:
    """A training loop under record() gives a plannable profile: one warm-up step, one
    measured for memory, the others timed (python/tests/profiler/test_record.py has more)."""
    model, x = MODELS["transformer"]()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with chainplan.record(model, spread_warning=None) as rec:
        for _ in range(4):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
        with torch.no_grad():
            model(x)  # not a training step: ignored
    assert rec.profile is not None and rec.profile.run_id is not None
    n = len(rec.stages)
    rows = chainplan.query(
        f"SELECT stage_index, rep, fwd_time_s, bwd_time_s, saved_bytes FROM measurements "
        f"WHERE run_id = {rec.profile.run_id} AND stage_index <= {n}").to_pylist()
    assert len(rows) == 2 * n
    assert all(r["fwd_time_s"] > 0 and r["bwd_time_s"] > 0 for r in rows), rows
    assert all(r["saved_bytes"] is not None and r["saved_bytes"] > 0 for r in rows)
    assert chainplan.plan(rec.profile.run_id, budget="min").budget_bytes > 0


class Branchy(nn.Module):
    """A model torch.export cannot capture: its control flow reads tensor values."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if x.sum() > 0 else x


def test_errors() -> None:
    model, x, y, prof = profiled("resnet")
    lo = chainplan.plan(prof, budget="min").budget_bytes
    with pytest.raises(chainplan.InfeasibleBudget) as info:
        chainplan.plan(prof, budget=lo // 2)
    assert info.value.min_budget_bytes == lo
    with pytest.raises(PlanError, match="unknown algorithm"):
        chainplan.plan(prof, budget="1GiB", algo="magic")
    with pytest.raises(PlanError, match="unknown unit"):
        chainplan.plan(prof, budget="12 parsecs")
    with pytest.raises(QueryError, match="read-only"):
        chainplan.query("DELETE FROM runs")
    assert chainplan.query("SELECT count(*) AS n FROM runs").to_pylist() == [{"n": 1}]
    with pytest.raises(NotFoundError):
        chainplan.plan(99, budget="1GiB")
    with pytest.raises(ProfileError, match="data-dependent control flow.*nn.Sequential"):
        chainplan.profile(Branchy(), torch.randn(2, 3))  # any other model is split
    with pytest.raises(ProfileError, match="sample="):
        chainplan.plan(model, budget="1GiB")
    plan = chainplan.plan(prof, budget="min")
    with pytest.raises(ArgumentTypeError, match=r"measure\(plan.wrap\(model\)"):
        chainplan.measure(plan, x)  # the plan where the wrapped model goes


def test_torch_free_modules() -> None:
    """chainplan.schedule, chainplan.schema and chainplan.errors import without torch."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import chainplan, chainplan.schedule, chainplan.schema, chainplan.errors\n"
            "p = chainplan.Plan.from_json('{\"sequence\": [{\"op\": \"F_all\", \"stage\": 1},"
            " {\"op\": \"B\", \"stage\": 1}]}'); p.validate(); print(p)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "F_all 1, B 1"


def test_pofo_plan_with_auto_bandwidth() -> None:
    """plan(..., algo="pofo", bandwidth="auto") measures the copy bandwidth once, records it
    with the run, and the plan runs with the plain model's gradients."""
    model, x, y, prof = profiled("vgg")
    # pofo's own smallest budget (it does not depend on the bandwidth): it plans on the
    # version 1 reading of the chain, so rotor's smallest on the exact model may be lower.
    lo = chainplan.tradeoff.min_budget(prof, algo="pofo", bandwidth="12GB/s")
    p = chainplan.plan(prof, budget=lo, algo="pofo", bandwidth="auto")
    assert p.offload is not None and p.offload.bandwidth_bytes_per_s > 0
    rows = chainplan.query("SELECT run_id, bandwidth_bytes_per_s, device FROM bandwidths")
    assert rows.num_rows == 1 and rows.to_pylist()[0]["device"] == "cpu"
    chainplan.plan(prof, budget=lo, algo="pofo", bandwidth="auto")  # reuses the stored one
    assert chainplan.query("SELECT count(*) AS n FROM bandwidths").to_pylist() == [{"n": 1}]
    assert chainplan.plan(prof, budget=lo, algo="pofo", bandwidth="12GB/s").makespan > 0
    ce = nn.CrossEntropyLoss()
    ref = copy.deepcopy(model)
    ce(ref(x), y).backward()
    ce(p.wrap(model)(x), y).backward()
    for a, b in zip(ref.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(PlanError, match="bandwidth"):
        chainplan.plan(prof, budget=lo, algo="pofo", bandwidth=-1.0)


def test_slots_default_per_algorithm() -> None:
    """Without slots each algorithm uses its own grid (rotor 500, POFO sized to the chain),
    which the plan and its database record report; a bad value is refused by name."""
    _, _, _, prof = profiled("vgg")
    lo = chainplan.plan(prof, budget="min").budget_bytes
    assert chainplan.plan(prof, budget=lo).raw["slots"] == 500
    assert chainplan.plan(prof, budget=2 * lo, slots=64).raw["slots"] == 64
    lo_pofo = chainplan.tradeoff.min_budget(prof, algo="pofo",
                                            bandwidth="12GB/s")  # version 1 reading
    p = chainplan.plan(prof, budget=lo_pofo, algo="pofo", bandwidth="12GB/s")
    assert 50 <= p.raw["slots"] <= 243 and p.raw["slots"] != 500
    rows = chainplan.query("SELECT slots, json_extract(params_json, '$.slots') AS asked "
                           "FROM plans WHERE algo = 'pofo'").to_pylist()
    assert rows == [{"slots": p.raw["slots"], "asked": p.raw["slots"]}]
    for bad in (0, -3, 2.5, True):
        with pytest.raises(PlanError, match="slots must be a positive integer"):
            chainplan.plan(prof, budget=lo, slots=bad)  # type: ignore[arg-type]
