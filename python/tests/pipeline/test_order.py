"""Each rank's action list from a periodic pattern: fill, steady state, drain."""

from __future__ import annotations

import pytest

from chainplan.errors import ScheduleError
from chainplan.pipeline.order import (
    builtin_schedule,
    format_orders,
    gpipe_orders,
    one_f_one_b_orders,
    rank_orders,
    steady_microbatches,
    steady_periods,
)
from chainplan.pipeline.plan import PipelinePlan
from tests.pipeline.plans import modulo_plan, plan_doc, spec_1f1b_star


def test_non_adjacent_stages_on_one_rank() -> None:
    # Map [0, 1, 1, 0], unit times, T = 4 (worked by hand): F0 0, F1 1, F2 2, F3 3 with
    # shift 0; B3 1+1T, B2 3+1T, B1 0+2T, B0 2+2T. Micro-batch b runs at start + (b+h)T.
    plan = PipelinePlan.from_dict(modulo_plan([0, 1, 1, 0], fwd=1, bwd=1))
    assert [(o.op, o.stage, o.start, o.shift) for o in plan.pattern if o.op in "FB"] == [
        ("F", 0, 0, 0), ("F", 1, 1, 0), ("F", 2, 2, 0), ("F", 3, 3, 0),
        ("B", 3, 1, 1), ("B", 2, 3, 1), ("B", 1, 0, 2), ("B", 0, 2, 2)]
    assert format_orders(rank_orders(plan, 4)).splitlines() == [
        "rank 0: 0F0 3F0 0F1 3B0 3F1 0F2 3B1 0B0 3F2 0F3 3B2 0B1 3F3 3B3 0B2 0B3",
        "rank 1: 1F0 2F0 1F1 2F1 2B0 1B0 1F2 2F2 2B1 1B1 1F3 2F3 2B2 1B2 2B3 1B3"]
    # Shifts 0..2: periods 2 and 3 run every operation (N = 4).
    assert steady_periods(plan, 4) == range(2, 4)
    assert steady_microbatches(plan, 4, 3) == range(2, 4)
    assert steady_periods(plan, 2) == range(2, 2)  # all fill and drain


def test_1f1b_star_keeps_the_group_count_in_flight() -> None:
    # specs/madpipe.md §1.7: groups [2, 2, 1, 1] at T = 6, so stages 0 and 1 hold two
    # micro-batches (two forwards before the first backward), stages 2 and 3 one.
    plan = PipelinePlan.from_dict(spec_1f1b_star())
    assert format_orders(rank_orders(plan, 4)).splitlines() == [
        "rank 0: 0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3",
        "rank 1: 1F0 1F1 1B0 1F2 1B1 1F3 1B2 1B3",
        "rank 2: 2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3",
        "rank 3: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3"]
    name, why = builtin_schedule(plan, rank_orders(plan, 4), 4)
    assert name == ""
    assert "rank 0, action 2: the plan runs 0B0 where Schedule1F1B runs 0F2" in why


def test_1f1b_at_the_load_bound_is_torch_schedule1f1b() -> None:
    # One stage per GPU at T = max load: 1F1B, whose order is torch's Schedule1F1B.
    plan = PipelinePlan.from_dict(modulo_plan([0, 1, 2, 3]))
    orders = rank_orders(plan, 6)
    assert orders == one_f_one_b_orders(4, 6)
    assert builtin_schedule(plan, orders, 6) == \
        ("Schedule1F1B", "every rank's order is Schedule1F1B's")
    assert one_f_one_b_orders(2, 3)[0] == tuple(
        a for a in rank_orders(PipelinePlan.from_dict(modulo_plan([0, 1])), 3)[0])
    # Fewer micro-batches than stages: torch refuses Schedule1F1B. With one, every order is
    # GPipe's; with two, the last stage alternates where GPipe would not.
    assert rank_orders(plan, 1) == gpipe_orders(4, 1)
    assert builtin_schedule(plan, rank_orders(plan, 1), 1)[0] == "ScheduleGPipe"
    name, why = builtin_schedule(plan, rank_orders(plan, 2), 2)
    assert name == "" and why.startswith("Schedule1F1B needs micro-batches ≥ stages (2 < 4)")


def test_no_builtin_for_a_permuted_or_shared_map() -> None:
    plan = PipelinePlan.from_dict(modulo_plan([1, 0]))
    assert builtin_schedule(plan, rank_orders(plan, 4), 4) == (
        "", "stage 0 is on GPU 1: torch's single-stage schedules put stage s alone on rank s")
    idle = PipelinePlan.from_dict(plan_doc(2, [0], [3], 3, [
        {"op": "F", "stage": 0, "start": 0, "duration": 1, "shift": 0},
        {"op": "B", "stage": 0, "start": 1, "duration": 2, "shift": 0}]))
    assert rank_orders(idle, 2) == {0: ((0, "F", 0), (0, "B", 0), (0, "F", 1), (0, "B", 1)),
                                     1: ()}
    assert "1 stage on 2 GPUs" in builtin_schedule(idle, rank_orders(idle, 2), 2)[1]


@pytest.mark.parametrize("gpus", [[0, 1, 1, 0], [0, 1, 2, 0, 0, 1, 2, 1], [0, 1, 2, 3, 3, 2, 1, 0],
                                  [2, 0, 1], [0, 0, 1, 1, 0]])
@pytest.mark.parametrize("n", [1, 3, 8])
def test_orders_respect_every_dependency(gpus: list[int], n: int) -> None:
    plan = PipelinePlan.from_dict(modulo_plan(gpus))
    orders = rank_orders(plan, n)
    done: set[tuple[int, str, int]] = set()
    # Replay the ranks round-robin, each running its next action once its input is done,
    # as the runtime's send/receive lowering does: it must never get stuck.
    pos = dict.fromkeys(orders, 0)
    last = len(plan.stages) - 1
    while any(pos[r] < len(orders[r]) for r in orders):
        progress = False
        for r, acts in orders.items():
            if pos[r] == len(acts):
                continue
            k, kind, b = acts[pos[r]]
            needs = ((k - 1, "F", b) if k else None) if kind == "F" else \
                ((k, "F", b) if k == last else (k + 1, "B", b))
            if needs is None or needs in done:
                assert plan.stages[k].gpu == r
                done.add((k, kind, b))
                pos[r] += 1
                progress = True
        assert progress, f"stuck at {pos}"
    assert len(done) == 2 * len(plan.stages) * n


def test_refuses_a_bad_microbatch_count() -> None:
    plan = PipelinePlan.from_dict(modulo_plan([0, 1]))
    with pytest.raises(ScheduleError, match=r"microbatches must be an integer ≥ 1 \(got 0\)"):
        rank_orders(plan, 0)
