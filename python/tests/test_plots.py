"""Pictures from Python: Plan.plot, chainplan.tradeoff.plot_frontier and the notebook display of
plans and profiles, all drawn by the Go side (internal/plot)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import NotFoundError, PlanError, SchemaError
from chainplan.profiler.run import Profile
from chainplan.schedule import Plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> list[str]:
    """The texts of an SVG document, which must parse as XML."""
    root = ET.fromstring(svg.encode())
    assert root.tag == SVG + "svg"
    return [t.text or "" for t in root.iter(SVG + "text")]


def tiny(ingest: bool = True) -> Profile:
    """A small MLP chain profiled with its loss."""
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 32), nn.Tanh(),
                          nn.Linear(32, 4))
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    return chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=2,
                             warmup=1, progress=False, ingest=ingest, name="tiny")


def test_plot_frontier_of_a_chain_file_marks_the_plan(tmp_path: Path) -> None:
    chain = EXAMPLES / "resnet50.json"
    plan = chainplan.plan(chain, budget="4GiB")
    out = tmp_path / "f.svg"
    svg = chainplan.tradeoff.plot_frontier(chain, plan=plan, title="resnet50", path=out)
    assert out.read_text() == svg
    words = texts(svg)
    for w in ("resnet50", "rotor", "revolve", "sequential", "store-all", "rotor at 4.00 GiB"):
        assert w in words
    assert "pofo" not in words


def test_plot_frontier_with_a_bandwidth_adds_the_offloading_algorithms() -> None:
    words = texts(chainplan.tradeoff.plot_frontier(EXAMPLES / "tiny.json", bandwidth="1kB/s",
                                                   budgets=3))
    assert "pofo" in words and "offload" in words


def test_plan_plot_knows_its_chain_file() -> None:
    plan = chainplan.plan(EXAMPLES / "tiny.json", budget="min")
    assert plan.chain_json is not None
    words = texts(plan.plot())
    assert "compute" in words and any(w.startswith("budget ") for w in words)
    assert plan._repr_svg_() == plan.plot()


def test_stored_plan_plots_from_the_database_with_its_measured_peak() -> None:
    prof = tiny()
    plan = chainplan.plan(prof, budget="min")
    assert plan.plan_id is not None and plan.chain_json is None
    chainplan.api._bind.record_execution(plan.plan_id, {"step_time_s": 0.01,
                                                        "peak_bytes": plan.peak_bytes + 64})
    words = texts(plan.plot())
    assert f"Plan {plan.plan_id} (run {prof.run_id}): rotor at" in " ".join(words)
    assert any(w.startswith("measured peak") for w in words)


def test_history_plots_the_executed_plans_of_a_run_or_a_model(tmp_path: Path) -> None:
    with pytest.raises(chainplan.ChainplanError, match="no database"):
        chainplan.history.plot_history()
    prof = tiny()
    with pytest.raises(PlanError, match=f"run {prof.run_id} has 0 plans and no execution"):
        chainplan.history.plot_history(prof)
    ran = [chainplan.plan(prof, budget="min"), chainplan.plan(prof, budget="min",
                                                               algo="store-all")]
    chainplan.plan(prof, budget="min", algo="sequential")  # never ran: not on the picture
    for p in ran:
        assert p.plan_id is not None
        chainplan.api._bind.record_execution(p.plan_id, {"step_time_s": 0.01,
                                                        "peak_bytes": p.peak_bytes})
    out = tmp_path / "h.svg"
    svg = chainplan.history.plot_history(prof, path=out)
    assert out.read_text() == svg
    words = texts(svg)
    assert f"Predicted against measured: run {prof.run_id}" in words
    labels = {w for w in words if w.startswith("#")}
    assert labels == {f"#{p.plan_id}" for p in ran}, words
    history = chainplan.history
    assert history.plot_history() == history.plot_history(prof.run_id)  # newest run
    assert "Predicted against measured: model tiny" in texts(history.plot_history(model="tiny"))
    with pytest.raises(PlanError, match="one of run and model"):
        chainplan.history.plot_history(prof, model="tiny")
    with pytest.raises(PlanError, match="not stored"):
        chainplan.history.plot_history(tiny(ingest=False))
    with pytest.raises(PlanError, match="model nothing has 0 plans"):
        chainplan.history.plot_history(model="nothing")
    with pytest.raises(chainplan.ChainplanError, match="999"):
        chainplan.history.plot_history(999)


def test_profile_displays_its_frontier() -> None:
    prof = tiny(ingest=False)
    svg = prof._repr_svg_()
    assert svg is not None and "rotor" in texts(svg)


def test_plot_errors(tmp_path: Path) -> None:
    loose = Plan.from_json(json.dumps(chainplan.plan(EXAMPLES / "tiny.json", budget="min").raw))
    assert loose.chain_json is None and loose.plan_id is None
    with pytest.raises(PlanError, match="pass chain="):
        loose.plot()
    assert loose._repr_svg_() is None
    assert "compute" in texts(loose.plot(chain=EXAMPLES / "tiny.json"))
    with pytest.raises(PlanError, match=r"\.svg"):
        chainplan.tradeoff.plot_frontier(EXAMPLES / "tiny.json", path=tmp_path / "f.png")
    with pytest.raises(PlanError, match="budgets"):
        chainplan.tradeoff.plot_frontier(EXAMPLES / "tiny.json", budgets=-1)
    with pytest.raises(NotFoundError, match='missing.json" is not an existing file'):
        chainplan.tradeoff.plot_frontier(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"format": "chainplan.chain/v1", "stages": []}')
    with pytest.raises(SchemaError):
        chainplan.tradeoff.plot_frontier(tmp_path / "bad.json")


PIPELINE = """{"format": "chainplan.pipeline/v1", "algo": "contiguous", "gpus": 2,
 "memory_bytes": 1000, "bandwidth": 100, "weight_copies": 2, "activation_model": "saved",
 "period": 4, "stages": [{"first": 1, "last": 1, "gpu": 0}, {"first": 2, "last": 2, "gpu": 1}],
 "pattern": [{"op": "F", "stage": 0, "start": 0, "duration": 1, "shift": 0},
             {"op": "CF", "stage": 0, "start": 1, "duration": 0.5, "shift": 0},
             {"op": "F", "stage": 1, "start": 1.5, "duration": 1, "shift": 0},
             {"op": "B", "stage": 1, "start": 2.5, "duration": 1, "shift": 0},
             {"op": "CB", "stage": 0, "start": 3.5, "duration": 0.5, "shift": 0},
             {"op": "B", "stage": 0, "start": 0, "duration": 1, "shift": 1}],
 "memory_per_gpu": [500, 400], "contiguous": true}"""


def test_pipeline_plan_plots_its_gantt_chart(tmp_path: Path) -> None:
    from chainplan.pipeline.plan import PipelinePlan

    pp = PipelinePlan.from_json(PIPELINE)
    out = tmp_path / "p.svg"
    words = texts(pp.plot(out, periods=2))
    # B of stage 0 runs one period late (shift 1): its mini-batches start at 0, the
    # others' at 1, over two periods.
    assert {"device 0", "device 1", "link 0-1", "F1", "F2", "B0", "B1"} <= set(words)
    assert "F3" not in words and "F0" not in words
    assert out.read_text() == pp.plot(periods=2)
    assert pp._repr_svg_() == pp.plot()
    with pytest.raises(PlanError, match="periods"):
        pp.plot(periods=0)


def test_offloading_plan_plots_its_transfers() -> None:
    plan = chainplan.plan(EXAMPLES / "tiny.json", budget="min", algo="greedy", bandwidth="1kB/s")
    assert plan.offload is not None and plan.offload.transfers
    words = texts(plan.plot())
    assert "link" in words and "compute" in words
    assert any(w.startswith("Memory timeline: greedy at") for w in words)
