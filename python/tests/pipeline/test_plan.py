"""PipelinePlan: reading chainplan.pipeline/v1 documents, refusals naming the field."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from typing import Any

import pytest

from chainplan.errors import ScheduleError
from chainplan.pipeline.plan import Link, PipelinePlan
from tests.pipeline.plans import modulo_plan, spec_1f1b_star


def test_reads_a_plan_with_non_adjacent_stages_on_one_gpu() -> None:
    doc = modulo_plan([0, 1, 1, 0], fwd=1, bwd=1, layers=[2, 1, 1, 3])
    plan = PipelinePlan.from_json(json.dumps(doc), plan_id=7, microbatches=4)
    assert plan.gpus == 2 and plan.num_layers == 7 and plan.period == 4
    assert plan.stage_gpus == (0, 1, 1, 0)
    assert [(s.first, s.last) for s in plan.stages] == [(1, 2), (3, 3), (4, 4), (5, 7)]
    assert [s.index for s in plan.stages_on(0)] == [0, 3]
    assert list(plan.stages[3].layers) == [5, 6, 7]
    # Boundaries 0→1 and 2→3 both cross the one link between GPUs 0 and 1.
    assert plan.links == (Link((0, 1), (0, 2)),)
    assert not plan.contiguous and plan.plan_id == 7 and plan.microbatches == 4
    b3 = plan.op("B", 3)
    assert b3 is not None and (b3.start, b3.shift) == (1, 1)
    assert plan.op("CF", 1) is None  # stages 1 and 2 share GPU 1: no transfer
    # A plan crosses processes (one rank plans, broadcast_object_list shares it).
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert json.loads(plan.to_json()) == doc


def test_reads_the_go_planner_optional_fields() -> None:
    doc = dict(spec_1f1b_star(), chosen="contiguous", predicted_period=5.5, solve_ms=1.25,
               microbatches=8)
    plan = PipelinePlan.from_dict(doc)
    assert (plan.chosen, plan.predicted_period, plan.solve_ms, plan.microbatches) == \
        ("contiguous", 5.5, 1.25, 8)
    assert plan.contiguous
    assert PipelinePlan.from_dict(doc, microbatches=2).microbatches == 2


def _broken(edit: Any) -> dict[str, Any]:
    doc = copy.deepcopy(modulo_plan([0, 1, 1, 0], fwd=1, bwd=1))
    edit(doc)
    return doc


def _drop(doc: dict[str, Any], op: str, stage: int) -> None:
    doc["pattern"] = [o for o in doc["pattern"] if (o["op"], o["stage"]) != (op, stage)]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(format="chainplan.schedule/v1"),
     r"^format: format chainplan\.schedule/v1 is not supported \(this chainplan reads "
     r"chainplan\.pipeline/v1\); it is another kind of document"),
    # Issue 33: a version this chainplan does not read is refused by name.
    (lambda d: d.update(format="chainplan.pipeline/v2"),
     r"^format: format chainplan\.pipeline/v2 is not supported \(this chainplan reads "
     r"chainplan\.pipeline/v1\)$"),
    (lambda d: d.pop("format"), r"^format: missing"),
    (lambda d: d.update(gpus=0), r"^gpus: want an integer ≥ 1 \(got 0\)"),
    (lambda d: d.update(gpus=2.0), r"^gpus: want an integer \(got 2\.0\)"),
    (lambda d: d.update(period=-1), r"^period: want a positive number"),
    (lambda d: d.update(stages=[]), r"^stages: want at least one stage"),
    (lambda d: d["stages"][2].update(first=5), r"^stages\[2\]\.first: want 3, the layer after"),
    (lambda d: d["stages"][1].update(last=1), r"^stages\[1\]\.last: want a layer ≥ first"),
    (lambda d: d["stages"][3].update(gpu=2), r"^stages\[3\]\.gpu: want a GPU below gpus \(2\)"),
    (lambda d: d["stages"][0].pop("gpu"), r"^stages\[0\]\.gpu: missing"),
    (lambda d: d["pattern"][0].update(op="X"), r"^pattern\[0\]\.op: unknown value 'X'"),
    (lambda d: d["pattern"][0].update(stage=4), r"^pattern\[0\]\.stage: want a stage below 4"),
    (lambda d: d["pattern"][0].update(start=4.5), r"^pattern\[0\]\.start: want a time in \[0, "),
    (lambda d: d["pattern"][0].update(duration=-1), r"^pattern\[0\]\.duration: want a time"),
    (lambda d: d["pattern"][0].update(shift=0.5), r"^pattern\[0\]\.shift: want an integer"),
    (lambda d: d["pattern"].append(dict(d["pattern"][0])), r"^pattern\[\d+\]: a second F of"),
    (lambda d: _drop(d, "B", 2), r"^pattern: no B of stage 2"),
    (lambda d: _drop(d, "CB", 2), r"^pattern: no CB of stage 2"),
    (lambda d: d["pattern"].append({"op": "CF", "stage": 1, "start": 0, "duration": 0,
                                    "shift": 0}),
     r"^pattern\[\d+\]: CF of stage 1, but stages 1 and 2 share GPU 1"),
    (lambda d: d.update(memory_per_gpu=[1.0]), r"^memory_per_gpu: want 2 values, one per GPU"),
    (lambda d: d.update(memory_per_gpu=[1.0, -2.0]), r"^memory_per_gpu\[1\]: want bytes ≥ 0"),
    (lambda d: d.update(activation_model="all"), r"^activation_model: unknown value 'all'"),
    (lambda d: d.update(weight_copies=0), r"^weight_copies: want an integer ≥ 1"),
    (lambda d: d.update(microbatches=0), r"^microbatches: want an integer ≥ 1"),
])
def test_refuses_a_bad_plan_naming_the_field(edit: Any, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        PipelinePlan.from_json(json.dumps(_broken(edit)))


def test_refuses_what_is_not_a_plan() -> None:
    with pytest.raises(ScheduleError, match="pipeline plan is not JSON"):
        PipelinePlan.from_json("{")
    with pytest.raises(ScheduleError, match="the document: want an object"):
        PipelinePlan.from_json("[]")
    with pytest.raises(ScheduleError, match="the chain has 3 layers but the stages cover 4"):
        PipelinePlan.from_dict(modulo_plan([0, 1, 1, 0]), layer_param_bytes=[1, 2, 3])


def test_plan_types_do_not_import_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "import chainplan.pipeline as p\n"
            "from chainplan.pipeline.plan import PipelinePlan\n"
            "from chainplan.pipeline.order import rank_orders\n"
            "assert p.PipelinePlan is PipelinePlan\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd="python")
