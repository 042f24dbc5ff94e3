"""chainplan.tradeoff.frontier and chainplan.tradeoff.min_budget against the planner they
summarize."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.errors import InfeasibleBudget, NotFoundError, PlanError
from chainplan.profiler.run import Profile
from chainplan.tradeoff import chain_json
from tests.models import MODELS

# rotor spec §4.7's heterogeneous chain; its frontier in exact bytes is known by hand.
SPEC_CHAIN = """{"format": "chainplan.chain/v1", "input_bytes": 2, "stages": [
 {"name": "s1", "fwd_time": 2, "bwd_time": 3, "out_bytes": 4, "saved_bytes": 6,
  "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1},
 {"name": "s2", "fwd_time": 3, "bwd_time": 4, "out_bytes": 3, "saved_bytes": 8,
  "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1},
 {"name": "s3", "fwd_time": 1, "bwd_time": 2, "out_bytes": 5, "saved_bytes": 7,
  "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 0}],
 "loss": {"fwd_time": 0, "bwd_time": 1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1}}"""

# Slots at least the tiny model's store-all peak in bytes: every unit is one byte, so the
# frontier, min_budget and plan() all work in exact bytes and must agree exactly.
EXACT_SLOTS = 1 << 14


def tiny(ingest: bool = True) -> Profile:
    """A small chain (a few KiB of activations), profiled with its loss: a linear layer, six
    element-wise activations that each save their own output, and a linear layer. Its
    frontier in the exact memory model (chainplan.chain/v2) has about ten points; that of
    an MLP alternating Linear and ReLU has two there, since each activation is saved once,
    by one of its two stages, and recomputing one saves nothing at the peak."""
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Sigmoid(), nn.Tanh(), nn.Sigmoid(),
                          nn.Tanh(), nn.Sigmoid(), nn.Linear(16, 4))
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    return chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=3,
                             warmup=1, progress=False, ingest=ingest, name="tiny")


def test_frontier_of_a_profile_agrees_with_plan() -> None:
    prof = tiny()
    f = chainplan.tradeoff.frontier(prof, slots=EXACT_SLOTS)
    assert f.algo == "rotor" and f.unit_bytes == 1 and f.store_all_peak_bytes < EXACT_SLOTS
    assert len(f.points) >= 3
    budgets = [p.budget_bytes for p in f.points]
    makespans = [p.makespan for p in f.points]
    assert budgets == sorted(set(budgets))
    assert all(a > b for a, b in zip(makespans, makespans[1:], strict=False))
    assert budgets[0] == chainplan.tradeoff.min_budget(prof, slots=EXACT_SLOTS)
    store_all = chainplan.plan(prof, budget=f.store_all_peak_bytes, algo="store-all")
    assert budgets[-1] == store_all.peak_bytes == f.store_all_peak_bytes
    assert makespans[-1] == pytest.approx(store_all.makespan, rel=1e-12)
    assert makespans[-1] == pytest.approx(f.sum_time, rel=1e-12)
    for k, pt in enumerate(f.points):
        p = chainplan.plan(prof, budget=pt.budget_bytes, slots=EXACT_SLOTS)
        assert p.makespan == pytest.approx(pt.makespan, rel=1e-12)
        assert pt.overhead == pytest.approx(pt.makespan / f.sum_time - 1, abs=1e-12)
        # A point is where the makespan drops: one byte less is slower, or infeasible.
        if k == 0:
            with pytest.raises(InfeasibleBudget):
                chainplan.plan(prof, budget=pt.budget_bytes - 1, slots=EXACT_SLOTS)
        else:
            below = chainplan.plan(prof, budget=pt.budget_bytes - 1, slots=EXACT_SLOTS)
            assert below.makespan > pt.makespan * (1 + 1e-12)


def test_every_source_gives_the_same_frontier(tmp_path: Path) -> None:
    prof = tiny()
    want = chainplan.tradeoff.frontier(prof).to_pylist()
    chain_file = tmp_path / "chain.json"
    chain_file.write_text(chain_json(prof.run_id or 0))
    unstored = Profile(path=prof.path, run_id=None, model_name=prof.model_name,
                       stage_names=prof.stage_names, rows=prof.rows, seconds=prof.seconds)
    for source in (prof.run_id, unstored, prof.path, str(prof.path), chain_file):
        assert source is not None
        assert chainplan.tradeoff.frontier(source).to_pylist() == want, source
        assert chainplan.tradeoff.min_budget(source) == chainplan.tradeoff.min_budget(prof)


@pytest.mark.parametrize("algo", ["rotor", "revolve"])
def test_default_grid_points_are_reproducible(algo: str) -> None:
    """On the default grid a point's own slots give a plan with the point's makespan."""
    model, x = MODELS["vgg"]()
    y = torch.randint(0, 10, (x.shape[0],))
    prof = chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=2,
                             warmup=1, progress=False)
    f = chainplan.tradeoff.frontier(prof, algo=algo)
    assert f.slots == 500 and f.unit_bytes == f.store_all_peak_bytes // 500
    assert [p.budget_bytes for p in f.points] == sorted(p.budget_bytes for p in f.points)
    # Every grid rounds sizes up, so no point lies below the exact smallest budget (slots at
    # least the peak in bytes: a one-byte unit). min_budget on the default grid searches each
    # budget's own finer unit and may lie on either side of the first point.
    exact = chainplan.tradeoff.min_budget(prof, algo=algo, slots=2 * f.store_all_peak_bytes)
    assert f.points[0].budget_bytes >= exact
    for pt in f.points:
        p = chainplan.plan(prof, budget=pt.budget_bytes, slots=pt.slots, algo=algo)
        assert p.makespan == pytest.approx(pt.makespan, rel=1e-12)
    if algo == "revolve":  # revolve stores no ā but the last one's: never the store-all time
        assert f.points[-1].makespan > f.sum_time


def test_spec_chain_frontier_and_table(tmp_path: Path) -> None:
    chain = tmp_path / "spec.json"
    chain.write_text(SPEC_CHAIN)
    f = chainplan.tradeoff.frontier(chain)
    assert [(p.budget_bytes, p.makespan) for p in f.points] == [
        (22, 23.0), (24, 21.0), (26, 19.0), (29, 18.0), (31, 16.0)]
    assert f.sum_time == 16 and f.store_all_peak_bytes == 31 and f.unit_bytes == 1
    assert chainplan.tradeoff.min_budget(chain) == 22
    text = str(f).splitlines()
    assert text[0].startswith("rotor frontier: 5 points, 500 slots of 1 B")
    assert len(text) == 2 + 5 and text[2].split()[:4] == ["22", "22", "B", "23"]
    assert text[-1].split()[4] == "0.00%"
    table = f.to_arrow()
    assert table.column_names == ["budget_bytes", "makespan", "overhead", "slots"]
    assert table.column("budget_bytes").to_pylist() == [22, 24, 26, 29, 31]
    assert f.point_at(21) is None
    assert f.point_at(25) == f.points[1] and f.point_at(10**9) == f.points[-1]


def test_torch_free(tmp_path: Path) -> None:
    """frontier and min_budget of a chain file need neither torch nor a Profile."""
    chain = tmp_path / "spec.json"
    chain.write_text(SPEC_CHAIN)
    code = ("import sys; sys.modules['torch'] = None\n"
            "import chainplan\n"
            f"f = chainplan.tradeoff.frontier({str(chain)!r}, algo='revolve')\n"
            f"print(len(f.points) > 0, "
            f"chainplan.tradeoff.min_budget({str(chain)!r}, algo='sequential'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "True" and int(out.stdout.split()[1]) > 0


@pytest.mark.parametrize("algo", ["rotor", "revolve", "sequential", "store-all"])
def test_min_budget_is_the_smallest(algo: str) -> None:
    prof = tiny()
    lo = chainplan.tradeoff.min_budget(prof, algo=algo)
    assert chainplan.plan(prof, budget="min", algo=algo).budget_bytes == lo
    assert chainplan.plan(prof, budget=lo, algo=algo).peak_bytes <= lo
    with pytest.raises(InfeasibleBudget) as e:
        chainplan.plan(prof, budget=lo - 1, algo=algo)
    assert e.value.min_budget_bytes == lo


def version1_chain(prof: Profile, tmp_path: Path) -> Path:
    """The chain of ``prof`` as version 1 reads it (Go's Chain.Conservative): the fields of
    the exact model left out, o_F at least o_R."""
    doc = json.loads(chain_json(prof.path))
    doc["format"] = "chainplan.chain/v1"
    for st in doc["stages"]:
        st["fwd_tmp_bytes"] = max(st["fwd_tmp_bytes"], st.get("recompute_tmp_bytes", 0))
        for k in ("saves_input", "saves_output", "recompute_time", "recompute_tmp_bytes",
                  "options"):
            st.pop(k, None)
    out = tmp_path / "v1.chain.json"
    out.write_text(json.dumps(doc))
    return out


def test_min_budget_with_offloading(tmp_path: Path) -> None:
    prof = tiny()
    lo = chainplan.tradeoff.min_budget(prof, algo="pofo", bandwidth="12GB/s")
    assert lo == chainplan.plan(prof, budget="min", algo="pofo", bandwidth=12e9).budget_bytes
    # Offloading never needs more memory than rotor on the chain it plans: the version 1
    # reading (its executor recomputes whole stages; docs/rotor.md). On the exact model
    # rotor may need less.
    assert lo <= chainplan.tradeoff.min_budget(version1_chain(prof, tmp_path))
    with pytest.raises(PlanError, match="bandwidth"):
        chainplan.tradeoff.min_budget(prof, algo="pofo")


def test_errors(tmp_path: Path) -> None:
    prof = tiny()
    for algo in ("pofo", "sequential", "optimal", "ROTOR"):
        with pytest.raises(PlanError, match="only rotor, rotor-ops and revolve have one"):
            chainplan.tradeoff.frontier(prof, algo=algo)
    # An algorithm for towers: where their frontier is, not only that this one has none.
    towers = (r"only rotor, rotor-ops and revolve have one \(of one chain; the frontier of "
              r"towers joined at the loss is multichain's: chainplan frontier --run RUN\)")
    with pytest.raises(PlanError, match=towers):
        chainplan.tradeoff.frontier(prof, algo="multichain")
    # The Go side refuses on its own too, naming the supported algorithms.
    with pytest.raises(PlanError, match='no frontier for algorithm "store-all": only rotor'):
        _bind.frontier({"chain": SPEC_CHAIN}, {"algo": "store-all"})
    for slots in (0, -5, 2.5, True):
        with pytest.raises(PlanError, match="slots must be a positive integer"):
            chainplan.tradeoff.frontier(prof, slots=slots)  # type: ignore[arg-type]
    with pytest.raises(PlanError, match="takes a Profile, a run id"):
        chainplan.tradeoff.frontier(1.5)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match='source "1" is not an existing file'):
        chainplan.tradeoff.min_budget("1")
    with pytest.raises(NotFoundError):
        chainplan.tradeoff.frontier(99)
    with pytest.raises(PlanError, match="unknown algorithm"):
        chainplan.tradeoff.min_budget(prof, algo="magic")
