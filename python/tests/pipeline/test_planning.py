"""pipeline_plan(): the Go planners in-process, the request checks, storing and reloading."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainplan.errors import ArgumentTypeError, InfeasibleBudget, NotFoundError, PlanError
from chainplan.pipeline import PipelinePlan, pipeline_plan
from chainplan.pipeline.requests import load_plan
from tests.pipeline import chains


@pytest.fixture
def eight(tmp_path: Path) -> Path:
    return chains.write(tmp_path / "eight.json")


def test_the_three_planners(eight: Path) -> None:
    # Memories from the sweep of tests/pipeline/chains.py (4 devices, β = 1e4 bytes/unit),
    # in the paper's model (no temporaries).
    got = {algo: pipeline_plan(eight, gpus=4, memory=mem, bandwidth=1e4, algo=algo,
                               microbatches=6, time_limit_s=5, temporaries=False)
           for algo, mem in [("contiguous", 2500), ("pipedream", 4000), ("madpipe", 10000)]}
    c = got["contiguous"]
    assert c.contiguous and c.stages_on(3) == () and c.microbatches == 6
    assert c.plan_id is None and c.layer_param_bytes is None  # a chain file: nothing stored
    assert got["pipedream"].algo == "pipedream" and got["pipedream"].memory_bytes == 4000
    m = got["madpipe"]
    assert m.chosen == "madpipe" and not m.contiguous
    held = [[s.index for s in m.stages_on(g)] for g in range(4)]
    assert any(b - a > 1 for ks in held for a, b in zip(ks, ks[1:], strict=False)), held
    assert m.period < got["contiguous"].period


def test_memory_min_and_infeasible(eight: Path) -> None:
    p = pipeline_plan(eight, gpus=4, memory="min", bandwidth="10kB/s", algo="contiguous",
                      temporaries=False)
    with pytest.raises(InfeasibleBudget, match="contiguous: no plan fits 1500 B") as e:
        pipeline_plan(eight, gpus=4, memory=1500, bandwidth=1e4, algo="contiguous",
                      temporaries=False)
    assert e.value.min_budget_bytes == p.memory_bytes == 1920
    # The memory a rank really holds needs more, and the refusal says how much.
    with pytest.raises(InfeasibleBudget) as e:
        pipeline_plan(eight, gpus=4, memory=1920, bandwidth=1e4, algo="contiguous")
    need = e.value.min_budget_bytes
    assert need > 1920
    again = pipeline_plan(eight, gpus=4, memory=need, bandwidth=1e4, algo="contiguous")
    assert again.memory_bytes == need


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"algo": "MadPipe"}, PlanError, "unknown pipeline algorithm .MadPipe."),
    ({"algo": 3}, ArgumentTypeError, r"algo must be a str"),
    ({"gpus": 0}, PlanError, r"gpus must be at least 1 \(got 0\)"),
    ({"gpus": 2.0}, ArgumentTypeError, r"gpus must be an integer \(got 2\.0 \(float\)\)"),
    ({"memory": 1.5e9}, ArgumentTypeError, r"memory must be an int \(bytes per device\)"),
    ({"memory": "lots"}, PlanError, "lots"),
    ({"bandwidth": -1}, PlanError, r"bandwidth must be a positive, finite number"),
    ({"weight_copies": 0}, PlanError, r"weight_copies must be at least 1"),
    ({"activation_model": "all"}, PlanError, r"activation_model must be 'saved' or 'input'"),
    ({"microbatches": 0}, PlanError, r"microbatches must be a positive integer \(got 0\)"),
    ({"time_limit_s": 0}, PlanError, r"time_limit_s must be a positive number"),
])
def test_bad_requests_name_the_argument(eight: Path, kwargs: dict[str, object],
                                        error: type[Exception], message: str) -> None:
    args: dict[str, object] = {"gpus": 4, "memory": 4000, "bandwidth": 1e4, "algo": "contiguous"}
    args.update(kwargs)
    with pytest.raises(error, match=message):
        pipeline_plan(eight, **args)  # type: ignore[arg-type]


def test_sources(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match='none.json" is not an existing file'):
        pipeline_plan(tmp_path / "none.json", gpus=2, memory=1000, bandwidth=1.0)
    with pytest.raises(PlanError, match="takes a Profile, a run id or a chain file"):
        pipeline_plan(3.5, gpus=2, memory=1000, bandwidth=1.0)  # type: ignore[arg-type]


def test_plans_of_a_profile_are_stored_and_reload() -> None:
    import torch

    import chainplan
    from tests.pipeline import workers

    x = torch.randn(2, 16)
    prof = chainplan.profile(workers.chain(4), x, loss_fn=workers.loss_fn, target=x,
                             spread_warning=None)
    p = pipeline_plan(prof, gpus=2, memory="min", bandwidth="1GB/s", algo="contiguous",
                      microbatches=8)
    assert p.plan_id is not None and p.run_id == prof.run_id and p.microbatches == 8
    # One Linear(16, 16) per block: (256 + 16) × 4 bytes (tests/pipeline/workers.py).
    assert p.layer_param_bytes == (1088,) * 4
    row = chainplan.query(f"SELECT algo, budget_bytes, makespan_s FROM plans "
                          f"WHERE plan_id = {p.plan_id}").to_pylist()[0]
    assert row == {"algo": "contiguous", "budget_bytes": p.memory_bytes,
                   "makespan_s": pytest.approx(p.period)}
    # The same request on the same profile gives back the stored plan; replan plans anew.
    again = pipeline_plan(prof, gpus=2, memory="min", bandwidth="1GB/s", algo="contiguous",
                          microbatches=8)
    assert again.plan_id == p.plan_id and any("reused plan" in n for n in again.notes)
    fresh = pipeline_plan(prof, gpus=2, memory="min", bandwidth="1GB/s", algo="contiguous",
                          microbatches=8, replan=True)
    assert fresh.plan_id != p.plan_id and fresh.stages == p.stages
    assert chainplan.reuse.find_profile(workers.chain(4), x,
                                        loss_fn=workers.loss_fn) == prof.run_id
    # A stored plan draws with its lanes named after the device its profile ran on.
    assert ">CPU 0<" in p.plot() and ">device 0<" not in p.plot()
    back = PipelinePlan.load(p.plan_id)
    assert (back.stages, back.pattern, back.period) == (p.stages, p.pattern, p.period)
    assert back.layer_param_bytes == p.layer_param_bytes and back.run_id == p.run_id
    assert back.microbatches == 8  # stored in the document
    with pytest.raises(NotFoundError, match="no plan 999"):
        load_plan(999)
    rotor = chainplan.plan(prof, budget="min")
    assert rotor.plan_id is not None
    with pytest.raises(chainplan.errors.ScheduleError, match="not a pipeline plan"):
        load_plan(rotor.plan_id)


def test_one_request_one_stored_plan(tmp_path: Path) -> None:
    """The CLI and Python with microbatches=4 and =8 ask for one plan: the micro-batches are
    the runner's, which the planners do not read. All three get one plan id, so that the
    executions of that plan gather under it; each gets back the micro-batches it gave."""
    import json
    import subprocess
    import sys

    import torch

    import chainplan
    from tests.pipeline import workers

    x = torch.randn(2, 16)
    prof = chainplan.profile(workers.chain(4), x, loss_fn=workers.loss_fn, target=x,
                             spread_warning=None)
    script = Path(sys.executable).parent / "chainplan"  # the installed console script
    cli = subprocess.run([str(script), "pipeline", "--run", str(prof.run_id), "--gpus", "2",
                          "--memory", "16MiB", "--bandwidth", "1GB/s", "--algo", "contiguous"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "microbatches" not in json.loads(cli.stdout)
    four, eight = (pipeline_plan(prof, gpus=2, memory="16MiB", bandwidth="1GB/s",
                                 algo="contiguous", microbatches=n) for n in (4, 8))
    assert f"recorded as plan {four.plan_id} of run {prof.run_id}" in cli.stderr
    assert four.plan_id == eight.plan_id
    assert (four.microbatches, eight.microbatches) == (4, 8)
    n = chainplan.query(f"SELECT count(*) AS n FROM plans WHERE run_id = {prof.run_id}")
    assert n.to_pylist() == [{"n": 1}]


def test_one_default_per_parameter(eight: Path, tmp_path: Path) -> None:
    """The CLI and Python, given the same request and nothing else, plan the same memory:
    the defaults (algorithm, weight copies, activation model, temporaries, time limit) live
    in the Go request type, not in either front end."""
    import json
    import subprocess
    import sys

    script = Path(sys.executable).parent / "chainplan"  # the installed console script
    cli = subprocess.run([str(script), "pipeline", "--chain", str(eight), "--gpus", "4",
                          "--memory", "min", "--bandwidth", "10000"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    doc = json.loads(cli.stdout)
    py = pipeline_plan(eight, gpus=4, memory="min", bandwidth=1e4)
    assert (py.algo, py.weight_copies, py.activation_model, py.temporaries) == \
        (doc["algo"], doc["weight_copies"], doc["activation_model"], doc["temporaries"]) == \
        ("madpipe", 2, "saved", True)
    assert py.memory_bytes == doc["memory_bytes"]
    assert list(py.memory_per_gpu) == doc["memory_per_gpu"]
    assert [(s.first, s.last, s.gpu) for s in py.stages] == \
        [(s["first"], s["last"], s["gpu"]) for s in doc["stages"]]


def test_faster_headroom_checkpoint(eight: Path) -> None:
    """memory="faster" gives a plan faster than one device, and at its smallest memory;
    headroom leaves a share of the memory free; checkpointing lowers the smallest memory
    and makes stages recompute; the plans say their speed-ups."""
    fast = pipeline_plan(eight, gpus=4, memory="faster", bandwidth=1e4, algo="contiguous")
    assert fast.speedup > 1
    assert fast.sequential_time == sum(3 * f for f in (1, 1, 4, 1, 1, 4, 1, 1))
    slow = pipeline_plan(eight, gpus=4, memory="min", bandwidth=1e4, algo="contiguous")
    assert slow.speedup < 1 < fast.speedup and slow.memory_bytes < fast.memory_bytes
    assert 0 < slow.memory_cost < fast.memory_cost <= 1
    assert "x the throughput of one device" in str(slow)
    roomy = pipeline_plan(eight, gpus=4, memory=10_000, bandwidth=1e4, algo="contiguous",
                          headroom=0.5)
    assert roomy.headroom == 0.5 and roomy.memory_limit == 5000
    assert max(roomy.memory_per_gpu) <= 5000
    ck = pipeline_plan(eight, gpus=4, memory="min", bandwidth=1e4, algo="contiguous",
                       checkpoint=True)
    assert ck.checkpoint and ck.memory_bytes < slow.memory_bytes
    recomputing = [s for s in ck.stages if s.recompute is not None]
    assert recomputing, ck
    r = recomputing[0].recompute
    assert r is not None and r.budget_bytes > 0 and r.sequence[-1].kind == "B"
    assert r.sequence[-1].stage == 1  # the backward ends with the stage's first layer
    with pytest.raises(PlanError, match=r"headroom must be a share of the memory in \[0, 1\)"):
        pipeline_plan(eight, gpus=4, memory=10_000, bandwidth=1e4, headroom=1.0)
    with pytest.raises(ArgumentTypeError, match="checkpoint must be True or False"):
        pipeline_plan(eight, gpus=4, memory=10_000, bandwidth=1e4, checkpoint="yes")  # type: ignore[arg-type]


def test_madpipe_refusal_names_where_it_plans(eight: Path) -> None:
    """MadPipe's refusal gives the smallest memory at which it plans, found directly (not a
    lower bound far below), and planning there succeeds."""
    with pytest.raises(InfeasibleBudget) as e:
        pipeline_plan(eight, gpus=4, memory=500, bandwidth=1e4, time_limit_s=5)
    need = e.value.min_budget_bytes
    assert need > 500
    again = pipeline_plan(eight, gpus=4, memory=need, bandwidth=1e4, time_limit_s=5)
    assert again.memory_bytes == need
