"""chainplan.parallel.advise and chainplan.parallel.search3d: the parallel fields the profiler
records, typed results, stored advice with measured runs, and errors that name the problem."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.advice import Advice, Search3D
from chainplan.errors import InfeasibleBudget, NotFoundError, PlanError, ProfileError
from chainplan.profiler.run import Profile
from tests.graph.models import make_gpt

ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = ROOT / "examples" / "clusters"

# Two nodes of four devices: small enough that every strategy applies to a tiny CNN.
SMALL = {"name": "small", "nodes": [{"name": "n", "count": 2, "gpu": "X", "gpus": 4,
                                     "gpu_mem": "2GB", "intra_bw": "50GB/s",
                                     "inter_bw": "5GB/s", "host_bw": "10GB/s"}],
         "latency": {"intra_s": 5e-6, "inter_s": 2e-5}}


def cnn() -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    """The CNN profiled once for the module (not stored: each test has its own database)."""
    torch.manual_seed(0)
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    return chainplan.profile(cnn(), x, loss_fn=nn.functional.cross_entropy, target=y, repeats=2,
                             warmup=1, batch_sizes=[2, 8], optimizer=torch.optim.Adam,
                             spread_warning=None, ingest=False,
                             path=tmp_path_factory.mktemp("profile") / "cnn.arrow")


@pytest.fixture
def profiled(measured: Profile) -> Profile:
    """The profile, stored in this test's database."""
    return dataclasses.replace(measured, run_id=_bind.ingest(str(measured.path)))


def test_profile_records_the_parallel_fields(profiled: Profile) -> None:
    first = next(r for r in profiled.rows if r.stage_index == 1)
    assert json.loads(first.in_shape or "") == [4, 3, 8, 8]
    assert json.loads(first.out_shape or "") == [4, 8, 8, 8]
    assert (first.weight_count, first.bias_count) == (3 * 8 * 9, 8)
    (conv,) = json.loads(first.modules_json or "")
    assert conv["type"] == "Conv2d" and conv["kernel"] == [3, 3] and conv["in_channels"] == 3
    times = json.loads(first.batch_times_json or "")
    assert times["batch_sizes"] == [2, 8] and len(times["fwd_time_s"]) == 2
    linear = next(r for r in profiled.rows if r.stage_index == 7)
    assert json.loads(linear.modules_json or "")[0]["out_channels"] == 10
    # Go reads them back from the store (the optimizer from the metadata).
    rows = chainplan.query("SELECT stage_index, weight_count FROM stage_parallel "
                           "ORDER BY stage_index").to_pylist()
    assert rows[0] == {"stage_index": 1, "weight_count": 216}
    meta = json.loads(chainplan.query("SELECT metadata_json FROM runs").to_pylist()[0]
                      ["metadata_json"])
    assert meta["optimizer"] == "Adam" and int(meta["optimizer_state_bytes"]) > 0
    assert meta["parallel_fields"] == "1"


def test_the_profiler_leaves_the_model_alone() -> None:
    model = cnn()
    before = [p.detach().clone() for p in model.parameters()]
    chainplan.profile(model, torch.randn(2, 3, 8, 8), repeats=1, warmup=0,
                      optimizer=lambda ps: torch.optim.SGD(ps, lr=1.0),
                      spread_warning=None, ingest=False)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_advise_a_profile(profiled: Profile) -> None:
    adv = chainplan.parallel.advise(profiled, SMALL, dataset_size=10_000, batch_per_device=4)
    assert isinstance(adv, Advice) and adv.advice_id == 1
    strategies = {c.strategy for c in adv.candidates}
    assert {"data", "filter", "spatial", "df", "ds", "pipeline"} <= strategies
    assert adv.optimizer == "Adam (profiled)" and adv.gamma > 0
    best = adv.best
    assert best is not None and best.rank == 1 and best.feasible
    assert best.epoch_time_s == pytest.approx(best.compute_s + best.comm_s)
    assert all(c.memory_bytes <= c.capacity_bytes for c in adv.feasible)
    # Measured runs against the predictions (spec §5.5).
    adv.record(adv.feasible[0], iteration_time_s=adv.feasible[0].iteration_time_s * 1.25,
               iterations=9)
    adv.record(adv.feasible[1].index, iteration_time_s=adv.feasible[1].iteration_time_s,
               iterations=9)
    acc = adv.accuracy()
    assert [c.candidate for c in acc.candidates] == [0, adv.feasible[1].index]
    assert acc.candidates[0].accuracy == pytest.approx(0.8)
    assert acc.mean_accuracy == pytest.approx(0.9) and acc.spearman is not None
    assert chainplan.query("SELECT count(*) AS n FROM advice_accuracy").to_pylist() == [{"n": 2}]


def test_search3d_a_profile(profiled: Profile) -> None:
    s3 = chainplan.parallel.search3d(profiled, SMALL, global_batch=16, cut="best")
    assert isinstance(s3, Search3D) and s3.advice_id == 1 and s3.enumerated > 0
    best = s3.best
    assert best is not None and best.fits and best.devices == 8
    assert best.stages[0].first_layer == 1 and best.stages[-1].last_layer == 7
    assert sum(len(st.devices) for st in best.stages) == 8
    assert s3.raw["format"] == "chainplan.search3d/v1"


def test_record_measured_from_a_launcher(profiled: Profile) -> None:
    """A launcher records its measured time and every rank's peak by the advice's id alone
    (issue 34), and the accuracy report compares them with the predictions."""
    from chainplan.advicerecord import record_measured

    s3 = chainplan.parallel.search3d(profiled, SMALL, global_batch=16, top_k=3)
    assert s3.raw["candidates"][0]["launch"]["mesh"] == {"pp": s3.candidates[0].pp,
                                               "dp": s3.candidates[0].dp,
                                               "tp": s3.candidates[0].tmp}
    db = os.environ["CHAINPLAN_DB"]  # the test's own database (conftest), named explicitly
    for i, factor in enumerate([1.25, 1.0]):
        record_measured(db, s3.advice_id, i, s3.candidates[i].iteration_time_s * factor,
                        [3 << 20, 7 << 20, 5 << 20], iterations=4, metadata={"launcher": "t"})
    acc = s3.accuracy()
    assert [c.candidate for c in acc.candidates] == [0, 1]
    assert acc.candidates[0].accuracy == pytest.approx(0.8)
    assert acc.mean_accuracy == pytest.approx(0.9) and acc.spearman is not None
    rows = chainplan.query("SELECT peak_bytes, metadata_json FROM advice_measurements "
                           "ORDER BY measurement_id").to_pylist()
    assert rows[0]["peak_bytes"] == 7 << 20
    assert json.loads(rows[0]["metadata_json"]) == {
        "launcher": "t", "peak_bytes_per_rank": [3 << 20, 7 << 20, 5 << 20]}
    # A calibration scales later predictions and adds its overhead.
    cal = chainplan.parallel.search3d(
        profiled, SMALL, global_batch=16, top_k=3,
        calibration={"compute_scale": 2, "comm_scale": 2, "overhead_s": 0.5})
    assert cal.raw["candidates"][0]["iteration_time_s"] == pytest.approx(
        2 * s3.candidates[0].iteration_time_s + 0.5)
    with pytest.raises(PlanError, match="calibration"):
        chainplan.parallel.search3d(
            profiled, SMALL, global_batch=16,
            calibration={"compute_scale": 1, "comm_scale": 1, "cluster": "other"})
    with pytest.raises(PlanError, match="advice_id"):
        record_measured(db, 0, 0, 1.0, [])
    with pytest.raises(PlanError, match="peak_bytes_per_rank"):
        record_measured(None, s3.advice_id, 0, 1.0, [1, -1])


def test_one_crossing_each(profiled: Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    """advise and search3d of a stored profile plan in one crossing into Go each: the result
    comes back whole, decoded once (the database found inside that crossing). Aside: the
    HiGHS program search3d may pass first (UseHighs)."""
    crossings: list[str] = []
    real = _bind.call

    def counting(fn: Any, *args: Any) -> Any:
        crossings.append(getattr(fn, "__name__", repr(fn)))
        return real(fn, *args)

    monkeypatch.setattr(_bind, "call", counting)
    chainplan.parallel.advise(profiled, SMALL, dataset_size=10_000, batch_per_device=4)
    aside = ("UseHighs",)
    assert [c for c in crossings if c not in aside] == ["Advise"], crossings
    crossings.clear()
    chainplan.parallel.search3d(profiled, SMALL, global_batch=16)
    assert [c for c in crossings if c not in aside] == ["Search3D"], crossings


def test_chain_files_and_example_clusters(tmp_path: Path) -> None:
    chain = ROOT / "examples" / "gpt2-medium.json"
    s3 = chainplan.parallel.search3d(chain, CLUSTERS / "amp-het-cluster.yaml", global_batch=32,
                                     batch=1,
                            device_speed={"T4-16GB": 0.35}, top_k=3)
    assert s3.advice_id == 0 and len(s3.candidates) == 3 and s3.enumerated == 53
    assert s3.megatron is not None and s3.megatron.dp == 16
    top = s3.candidates[0]
    assert top.mbs == 1 and top.tmp == 1 and top.pp in (4, 8)
    with pytest.raises(PlanError, match="not stored"):
        s3.record(0, iteration_time_s=1.0)
    adv = chainplan.parallel.advise(str(ROOT / "examples" / "vgg16.json"), CLUSTERS / "abci.yaml",
                                    dataset_size=1_281_167, batch_per_device=32, batch=128,
                                    devices=[4, 64], strategies=["data", "pipeline"])
    assert adv.advice_id == 0 and {c.strategy for c in adv.candidates} == {"data", "pipeline"}


def test_errors_name_the_problem(profiled: Profile, tmp_path: Path) -> None:
    bad = {"name": "x", "nodes": [{"gpu": "X", "gpus": 2, "gpu_mem": "1GB", "intra_bw_gbps": -1}]}
    with pytest.raises(PlanError, match=r"nodes\[0\]\.intra_bw_gbps"):
        chainplan.parallel.advise(profiled, bad, dataset_size=10, global_batch=4)
    with pytest.raises(NotFoundError, match="cluster file"):
        chainplan.parallel.advise(profiled, tmp_path / "none.yaml", dataset_size=10,
                                  global_batch=4)
    with pytest.raises(PlanError, match="batch: the batch size the chain was measured at is"):
        chainplan.parallel.advise(ROOT / "examples" / "vgg16.json", SMALL, dataset_size=10,
                                  global_batch=4)
    with pytest.raises(PlanError, match="global_batch .* or batch_per_device"):
        chainplan.parallel.advise(profiled, SMALL, dataset_size=10)
    with pytest.raises(PlanError, match="unknown strategy"):
        chainplan.parallel.advise(profiled, SMALL, dataset_size=10, global_batch=4,
                                  strategies=["tensor"])
    with pytest.raises(PlanError, match="modules_json"):
        chainplan.parallel.advise(ROOT / "examples" / "vgg16.json", SMALL, dataset_size=10,
                                  global_batch=4, batch=128, strategies=["filter"])
    with pytest.raises(PlanError, match="memory_check"):
        chainplan.parallel.search3d(profiled, SMALL, global_batch=8, memory_check="maybe")
    tiny = {"name": "tiny", "nodes": [{"gpu": "X", "gpus": 2, "gpu_mem": "1kB",
                                       "intra_bw": "1GB/s"}]}
    with pytest.raises(InfeasibleBudget) as err:
        chainplan.parallel.advise(profiled, tiny, dataset_size=10, global_batch=4)
    assert err.value.min_budget_bytes > 1000
    with pytest.raises(InfeasibleBudget, match="no candidate fits"):
        chainplan.parallel.search3d(profiled, tiny, global_batch=4)
    with pytest.raises(ProfileError, match="batch_sizes"):
        chainplan.profile(cnn(), torch.randn(2, 3, 8, 8), batch_sizes=[0], ingest=False)


def test_a_model_split_from_its_graph_records_its_modules() -> None:
    """A regression: stages cut from a captured graph call no nn.Conv2d or nn.Linear of their
    own, so hooks on the stage found nothing and advise refused filter parallelism for a GPT;
    the modules are found on the model as written and matched to stages by their weights."""
    case = make_gpt(batch=2, seq=8, blocks=2)
    prof = chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             repeats=1, warmup=0, spread_warning=None, **case.kwargs)
    per_stage = [json.loads(r.modules_json or "[]") for r in prof.rows
                 if r.stage_kind == "stage" and r.rep == 0]
    names = [m["name"] for mods in per_stage for m in mods]
    assert any(n.endswith("qkv") or "attn" in n for n in names), names
    assert per_stage[-1] and per_stage[-1][-1]["type"] == "Linear"  # the head
    adv = chainplan.parallel.advise(prof, SMALL, dataset_size=1000, batch_per_device=2,
                                    devices=[4],
                           strategies=["filter", "df"])
    assert {c.strategy for c in adv.candidates} == {"filter", "df"}


def test_a_candidate_tells_each_rank_its_stage_and_groups(tmp_path: Path) -> None:
    s3 = chainplan.parallel.search3d(ROOT / "examples" / "gpt-7b-40.json",
                                     CLUSTERS / "a100-64.yaml",
                            global_batch=512, batch=1, top_k=5)
    mixed = [c for c in s3.candidates if c.pp > 1 and c.dp > 1 and c.tmp > 1]
    assert mixed, [(c.pp, c.dp, c.tmp) for c in s3.candidates]
    for c in (*s3.candidates, s3.megatron):
        assert c is not None
        groups = c.process_groups()
        for kind, size in (("tensor", c.tmp), ("data", c.dp), ("pipeline", c.pp)):
            gs = getattr(groups, kind)
            assert all(len(g) == size for g in gs), (kind, gs)
            assert sorted(r for g in gs for r in g) == list(range(c.devices)), (kind, gs)
        for rank in range(c.devices):
            lay = c.layout(rank)
            st = c.stages[lay.stage]
            assert st.devices[lay.data_index * c.tmp + lay.tensor_index] == rank
            assert (lay.first_layer, lay.last_layer) == (st.first_layer, st.last_layer)
            assert lay.tensor_group in groups.tensor and lay.data_group in groups.data
            assert lay.pipeline_group in groups.pipeline and lay.pipeline_group[lay.stage] == rank
            assert all(lay.pipeline_group[j] in c.stages[j].devices for j in range(c.pp))
            assert lay.previous_rank == (lay.pipeline_group[lay.stage - 1] if lay.stage else None)
            if c.placement == "megatron":  # rank = t + tmp·d + tmp·dp·j (spec §3.6)
                assert rank == lay.tensor_index + c.tmp * lay.data_index + c.tmp * c.dp * lay.stage
    # pipesim's check of every pipeline (docs/parallel.md, "The pipesim check").
    for c in (*s3.candidates, s3.megatron):
        assert c is not None
        if c.pp == 1:
            assert c.simulated is None
            continue
        sim = c.simulated
        assert sim is not None and sim.schedule == "1f1b-flush" and sim.microbatches == c.gas
        assert sim.pipeline_time_s > 0 and len(sim.stages) == c.pp
        assert sim.divergence == pytest.approx(
            (sim.pipeline_time_s - c.pipeline_time_s) / c.pipeline_time_s)
        pairs = zip(sim.stages, c.stages, strict=True)
        assert all(0 < st.in_flight <= cs.in_flight for st, cs in pairs)
        assert all(st.peak_bytes > 0 for st in sim.stages)
    assert all("pipesim" in w or "stage" in w for w in s3.warnings)
    # A document written before the check (no "simulated", no "warnings") still loads.
    old = json.loads(json.dumps(s3.raw))
    old.pop("warnings", None)
    for c in old["candidates"]:
        c.pop("simulated", None)
    legacy = Search3D.from_json(old)
    assert all(c.simulated is None for c in legacy.candidates) and legacy.warnings == ()
    # The JSON a training script reads (chainplan search3d -o FILE) loads back.
    out = tmp_path / "s3.json"
    out.write_text(json.dumps(s3.raw))
    again = Search3D.load(out)
    assert again.candidates == s3.candidates and again.advice_id == 0
    best = mixed[0]
    with pytest.raises(PlanError, match=f"rank {best.devices} is not a device"):
        best.layout(best.devices)
    broken = dataclasses.replace(best, stages=(dataclasses.replace(
        best.stages[0], devices=best.stages[1].devices), *best.stages[1:]))
    with pytest.raises(PlanError, match="stage 1 lists device"):
        broken.process_groups()
    out.write_text("[1]")
    with pytest.raises(PlanError, match="not a search3d document"):
        Search3D.load(out)


def test_measured_links_replace_the_cluster_files(profiled: Profile) -> None:
    """A link bandwidth recorded with the stored run (record_link) replaces the cluster
    file's in both advisors, which list it; nominal_links=True keeps the file's."""
    def times(s3: Search3D) -> dict[tuple[int, int, int, int], float]:
        out: dict[tuple[int, int, int, int], float] = {}
        for c in s3.candidates:
            k = (c.pp, c.dp, c.tmp, c.mbs)
            out[k] = min(out.get(k, c.iteration_time_s), c.iteration_time_s)
        return out

    req: dict[str, Any] = {"global_batch": 16, "top_k": -1, "memory_check": "off"}
    before = chainplan.parallel.search3d(profiled, SMALL, **req)
    assert before.measured_links == ()
    # Measured on this (CPU) run's own device, the link is not the GPU cluster's: unused.
    chainplan.parallel.record_link(profiled, "inter", "0.01GB/s", method="test")
    unused = chainplan.parallel.search3d(profiled, SMALL, **req)
    assert unused.measured_links == () and any("not used" in n for n in unused.notes)
    stored = chainplan.parallel.record_link(profiled, "inter", "0.05GB/s", device="X",
                                            method="test")
    assert stored == 5e7
    after = chainplan.parallel.search3d(profiled, SMALL, **req)
    assert [(m.node, m.link, m.nominal_bytes_per_s, m.measured_bytes_per_s)
            for m in after.measured_links] == [(n, "inter", 5e9, 5e7) for n in ("n-0", "n-1")]
    assert any("link bandwidths measured" in n for n in after.notes)
    slow, fast = times(after), times(before)
    assert all(slow[k] >= fast[k] for k in fast) and any(slow[k] > fast[k] for k in fast)
    nominal = chainplan.parallel.search3d(profiled, SMALL, nominal_links=True, **req)
    assert nominal.measured_links == () and times(nominal) == fast
    adv = chainplan.parallel.advise(profiled, SMALL, dataset_size=10_000, batch_per_device=4)
    assert {m.link for m in adv.measured_links} == {"inter"}
    with pytest.raises(PlanError, match="link must be one of"):
        chainplan.parallel.record_link(profiled, "nvlink", 1e9)
    with pytest.raises(PlanError, match="positive, finite"):
        chainplan.parallel.record_link(profiled, "intra", 0.0)
    with pytest.raises(PlanError, match="needs a stored run"):
        chainplan.parallel.record_link("cnn.arrow", "intra", 1e9)


def test_an_absurd_stored_link_is_refused(profiled: Profile) -> None:
    """A stored bandwidth written around chainplan (an infinity passes the table's > 0) is
    refused naming its row; nominal_links=True plans regardless."""
    import sqlite3

    db = sqlite3.connect(os.environ["CHAINPLAN_DB"])
    with db:  # commits
        db.execute("INSERT INTO bandwidths (run_id, measured_at, bandwidth_bytes_per_s, device, "
                   "method, link) VALUES (?, '2026-12-07T00:00:00Z', ?, 'X', 'hand', 'inter')",
                   (profiled.run_id, float("inf")))
    db.close()
    with pytest.raises(PlanError, match=r"measured bandwidth 1 .*not a positive, finite"):
        chainplan.parallel.search3d(profiled, SMALL, global_batch=16)
    assert chainplan.parallel.search3d(profiled, SMALL, global_batch=16,
                                       nominal_links=True).measured_links == ()
