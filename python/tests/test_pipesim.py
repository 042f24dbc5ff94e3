"""chainplan.pipeline.pipesim(): the Go simulator in-process, its typed result, the argument
checks, traces and pictures, and simulations of stored runs and plans recorded in the database."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import chainplan
from chainplan import _bind
from chainplan.errors import ArgumentTypeError, NotFoundError, PlanError, ScheduleError
from chainplan.pipeline import pipeline_plan
from chainplan.simulation import Simulation
from tests.pipeline import chains


@pytest.fixture
def eight(tmp_path: Path) -> Path:
    return chains.write(tmp_path / "eight.json")


def _layers(path: Path) -> list[dict[str, float]]:
    return list(json.loads(path.read_text())["stages"])


def test_gpipe_closed_form(eight: Path) -> None:
    # One stage per layer, no communication: GPipe takes Σf + (N−1)·max f + Σb + (N−1)·max b
    # per mini-batch (spec §5.4 S-1), the stage times being the layers' (the loss in the last).
    layers = _layers(eight)
    loss = json.loads(eight.read_text()).get("loss", {})
    f = [s["fwd_time"] for s in layers]
    b = [s["bwd_time"] for s in layers]
    f[-1] += loss.get("fwd_time", 0)
    b[-1] += loss.get("bwd_time", 0)
    n = 5
    sim = chainplan.pipeline.pipesim(eight, schedule="gpipe", stages=len(layers), microbatches=n,
                                     minibatches=2)
    want = sum(f) + (n - 1) * max(f) + sum(b) + (n - 1) * max(b)
    assert math.isclose(sim.period, want, rel_tol=1e-9)
    assert math.isclose(sim.makespan, 2 * want, rel_tol=1e-9)
    assert sim.schedule == "gpipe" and sim.version_difference == 1 and sim.max_staleness == 0
    assert all(s.peak_inflight == n for s in sim.per_stage)
    assert sim.run_id is None and sim.simulation_id is None  # a chain file: nothing stored


def test_timeprest_in_unit_time(eight: Path, tmp_path: Path) -> None:
    trace, svg = tmp_path / "t.json", tmp_path / "g.svg"
    sim = chainplan.pipeline.pipesim(eight, schedule="timeprest", stages=4, microbatches=2,
                                     minibatches=12,
                            unit_time=True, trace=trace, plot=svg)
    # T-1/T-2 of spec §4.9: W=4, N=2 gives v = 2, two chains, V_b(3..5) = 1, 2, 3.
    assert sim.version_difference == sim.paper_version_difference == 2 and sim.chains == 2
    assert [m.backward_version for m in sim.per_minibatch[2:5]] == [1, 2, 3]
    assert [s.peak_inflight for s in sim.per_stage] == [8, 6, 4, 2]
    assert any("multiple-sequence" in w for w in sim.warnings)
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 12 * 2 * 4 + 12 * 4  # forwards, backwards
    assert svg.read_text().startswith("<?xml") and sim.svg is not None
    assert sim._repr_svg_() == sim.svg
    # W=6, N=2: the paper's formula (3) and the simulation (2) disagree, and it is flagged.
    six = chainplan.pipeline.pipesim(eight, schedule="timeprest", stages=6, microbatches=2,
                                     minibatches=24,
                            unit_time=True)
    assert (six.paper_version_difference, six.version_difference) == (3, 2)
    assert any("closed form" in w for w in six.warnings)


def test_stage_specs_and_options(eight: Path) -> None:
    ranges = chainplan.pipeline.pipesim(eight, schedule="1f1b-flush", stages=[(1, 3), (4, 8)],
                                        microbatches=4, bandwidth="10kB/s", alpha_s=1e-3,
                                        checkpoint=[1], weight_copies=3)
    assert ranges.stages == ((1, 3, 0), (4, 8, 1)) and ranges.links and len(ranges.per_link) == 2
    assert ranges.per_stage[1].checkpointed and not ranges.per_stage[0].checkpointed
    same = chainplan.pipeline.pipesim(eight, schedule="1f1b-flush", stages="1-3,4-8",
                                      microbatches=4,
                             bandwidth=1e4, alpha_s=1e-3, checkpoint=[1], weight_copies=3)
    assert same.period == ranges.period and same.peak_bytes == ranges.peak_bytes
    every = chainplan.pipeline.pipesim(eight, schedule="pipedream-async", stages=2, microbatches=1,
                                       checkpoint="all", memory=1)
    assert all(s.checkpointed for s in every.per_stage)
    assert not any(d.fits for d in every.per_device) and any("more than the memory" in w
                                                               for w in every.warnings)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"schedule": "GPipe"}, PlanError, 'unknown schedule "GPipe"'),
    ({"schedule": 1}, ArgumentTypeError, "schedule must be a str"),
    ({"microbatches": 0}, PlanError, r"microbatches must be at least 1 \(got 0\)"),
    ({"microbatches": 2.0}, ArgumentTypeError, "microbatches must be an integer"),
    ({"stages": "1-3,5-8"}, PlanError, "starts at layer 5, want 4"),
    ({"stages": "1-3"}, PlanError, "the ranges end at layer 3, the chain has 8 layers"),
    ({"stages": 9}, PlanError, "9 stages: want 1..8"),
    ({"stages": [(1, 4), "5-8"]}, ArgumentTypeError,
     r"stages\[1\] must be a \(first, last\) pair"),
    ({"stages": None}, PlanError, "the stages are required"),
    ({"schedule": "periodic"}, PlanError, "periodic replays a chainplan.pipeline/v1 plan"),
    ({"max_inflight": 2}, PlanError, "timeprest only"),
    ({"checkpoint": "some"}, ArgumentTypeError, "checkpoint must be stage indices or 'all'"),
    ({"checkpoint": [5]}, PlanError, r"stage 5 is not in 0\.\.1"),
    ({"alpha_s": 1e-3}, PlanError, "needs the link model"),
    ({"bandwidth": -1}, PlanError, "bandwidth must be a positive"),
    ({"activation_model": "all"}, PlanError, "activation_model must be"),
    ({"plot": "g.png"}, PlanError, "pictures from Python are SVG"),
])
def test_bad_arguments(eight: Path, kwargs: dict[str, object], error: type[Exception],
                       message: str) -> None:
    args: dict[str, object] = {"schedule": "gpipe", "stages": 2, "microbatches": 2}
    args.update(kwargs)
    with pytest.raises(error, match=message):
        chainplan.pipeline.pipesim(eight, **args)  # type: ignore[arg-type]


def test_sources(eight: Path, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match='none.json" is not an existing file'):
        chainplan.pipeline.pipesim(tmp_path / "none.json", schedule="gpipe", stages=2,
                                   microbatches=2)
    with pytest.raises(PlanError, match="needs a source"):
        chainplan.pipeline.pipesim(schedule="gpipe", stages=2, microbatches=2)
    with pytest.raises(ArgumentTypeError, match="takes a Profile, a run id or a chain file"):
        chainplan.pipeline.pipesim(2.5, schedule="gpipe", stages=2, microbatches=2)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        chainplan.pipeline.pipesim(99, schedule="gpipe", stages=2, microbatches=2)
    with pytest.raises(ScheduleError, match="simulation: missing"):
        Simulation.from_dict({"svg": "x"})


def test_plan_replayed(eight: Path) -> None:
    # An unstored plan: periodic replays it at its period and memory per device.
    pp = pipeline_plan(eight, gpus=4, memory=10000, bandwidth=1e4, algo="madpipe", time_limit_s=5)
    sim = chainplan.pipeline.pipesim(eight, schedule="periodic", plan=pp, microbatches=1,
                                     minibatches=60)
    assert math.isclose(sim.microbatch_period, pp.period, rel_tol=1e-9)
    assert sim.plan_period == pp.period
    assert [d.peak_bytes for d in sim.per_device] == [int(m) for m in pp.memory_per_gpu]
    with pytest.raises(PlanError, match="not both"):
        chainplan.pipeline.pipesim(eight, schedule="gpipe", plan=pp, stages=4, microbatches=2)


def test_stored_run_and_plan(eight: Path) -> None:
    # A stored run: the chain file ingested as a profile is not at hand here, so store a
    # pipeline plan of a profiled model and simulate it from its run and from the plan.
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(4)])
    prof = chainplan.profile(model, torch.randn(8, 16), loss_fn=torch.nn.MSELoss(),
                             target=torch.randn(8, 16))
    pp = pipeline_plan(prof, gpus=2, memory="1GiB", bandwidth="1GB/s", algo="contiguous")
    first = chainplan.pipeline.pipesim(prof, schedule="2bw", stages=2, microbatches=2)
    assert first.run_id == prof.run_id and first.simulation_id == 1 and first.comparisons == ()
    for rank in range(2):  # what the runner records after measuring (docs/pipeline.md)
        _bind.record_execution(pp.plan_id, {
            "step_time_s": 0.001, "peak_bytes": 4096 + rank, "steps": 3, "device": "cpu",
            "torch_version": torch.__version__, "metadata": {
                "kind": "pipeline", "rank": str(rank), "world_size": "2", "schedule": "plan",
                "microbatches": "4", "rank_step_time_s": "0.01", "microbatch_time_s": "nan"}})
    sim = chainplan.pipeline.pipesim(schedule="periodic", plan=pp, microbatches=4, flush=True)
    assert sim.simulation_id == 2 and sim.run_id == prof.run_id
    assert [c.rank for c in sim.comparisons] == [0, 1]
    assert sim.comparisons[1].measured_peak_bytes == 4097
    assert math.isnan(sim.comparisons[0].measured_microbatch_s)
    assert math.isclose(sim.comparisons[0].predicted_step_s, sim.period, rel_tol=1e-9)
    other = chainplan.pipeline.pipesim(schedule="1f1b-flush", plan=pp, microbatches=4)
    assert other.comparisons == ()
    assert any("ran plan (simulate --schedule periodic to compare)" in w for w in other.warnings)
    rows = chainplan.query("SELECT schedule, plan_id FROM simulation_summary "
                           "ORDER BY simulation_id")
    assert rows.column("schedule").to_pylist() == ["2bw", "periodic", "1f1b-flush"]
    assert rows.column("plan_id").to_pylist() == [None, pp.plan_id, pp.plan_id]


def test_torch_free() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "import chainplan.simulating, chainplan.simulation\n"
            "print(chainplan.pipeline.pipesim.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "chainplan.simulating"


def test_simulation_entries_of_the_registry() -> None:
    from chainplan.algorithms import algorithms, check_algorithm

    sims = [a.name for a in algorithms().values() if a.family == "simulation"]
    assert sims == ["gpipe", "1f1b-flush", "pipedream-async", "2bw", "timeprest", "periodic"]
    with pytest.raises(PlanError, match="pipeline schedule the simulator runs"):
        check_algorithm("timeprest")
