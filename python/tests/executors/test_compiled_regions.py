"""A plan's recomputations of consecutive stages run as one region each
(``chainplan.executors.regions``): compiled, a step calls one compiled region per
recomputation run, not one per stage, with the plain model's gradients, and the measured
peak stays within the plan's budget."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan.executors.program import Program
from chainplan.executors.regions import Run, recomputation_runs
from chainplan.runtime import compiled
from chainplan.schedule import Plan
from tests.executors.test_compile import _ops
from tests.graph.models import make_gpt
from tests.models import gpt_like

# make_gpt(blocks=3): 8 stages, the first (embedding + dropout) draws random numbers. a_0 and
# a_1 are checkpoints; before B6, B5, B4 and B3 the plan recomputes from a_1: stages 2-5,
# 2-4, 2-3 and 2 alone, then fills the stage whose backward comes.
PLAN = _ops(
    "F_ck1 F_ck2 F_none3 F_none4 F_none5 F_none6 F_ck7 F_all8 F_all9 B9 B8 F_all7 B7 "
    "F_ck2 F_none3 F_none4 F_none5 F_all6 B6 F_ck2 F_none3 F_none4 F_all5 B5 "
    "F_ck2 F_none3 F_all4 B4 F_ck2 F_all3 B3 F_all2 B2 F_all1 B1")


def test_recomputation_runs() -> None:
    """The runs of the plan above and of two others: a run returns the checkpoints it makes
    on the way, and a run whose input goes after its first stage starts later."""
    runs = recomputation_runs(Program.of(Plan("rotor", 0.0, 0, 0, PLAN)))
    assert [(r.first, r.last, r.keep) for r in runs] == [
        (2, 5, (5,)), (2, 4, (4,)), (2, 3, (3,))]
    # F_ck keeps a checkpoint on the way: the run returns it too.
    plan = Plan("rotor", 0.0, 0, 0, _ops(
        "F_ck1 F_none2 F_none3 F_ck4 F_all5 B5 F_ck1 F_none2 F_ck3 F_all4 B4 "
        "F_all3 B3 F_ck1 F_all2 B2 F_all1 B1"))
    runs = recomputation_runs(Program.of(plan))
    assert runs == [Run(6, 8, 1, 3, (2, 3))], runs
    # Before B5 the run 2-4 starts from a_1, which goes after stage 2, and a_2 after
    # stage 3: held by a region, each would outlive its plan's drop, so those stages go one
    # by one. Before B3 the run 1-2 returns a_1 and a_2, both read later.
    plan = Plan("rotor", 0.0, 0, 0, _ops(
        "F_ck1 F_ck2 F_none3 F_none4 F_none5 F_all6 B6 F_none2 F_none3 F_ck4 F_all5 B5 "
        "F_all4 B4 F_ck1 F_ck2 F_all3 B3 F_all2 B2 F_all1 B1"))
    runs = recomputation_runs(Program.of(plan))
    assert runs == [Run(14, 15, 1, 2, (1, 2))], runs


@contextlib.contextmanager
def _counting(monkeypatch: pytest.MonkeyPatch, calls: list[int]) -> Iterator[None]:
    """Counts into ``calls[0]`` the compiled callables invoked: every stage, stretch or
    region call of the executor goes through ``chainplan.runtime.compiled.stage_call``."""
    real = compiled.stage_call

    def counted(callback: Any, stage: nn.Module, *args: Any) -> Any:
        calls[0] += 1
        return real(callback, stage, *args)

    with monkeypatch.context() as m:
        m.setattr(compiled, "stage_call", counted)
        yield


@pytest.mark.parametrize(("compiling", "dropout"),
                         [(True, False), (False, False), (True, True)])
def test_a_recomputation_runs_as_one_region(monkeypatch: pytest.MonkeyPatch,
                                            compiling: bool, dropout: bool) -> None:
    """The plan above on a captured GPT (a mask as side input): each step calls 8 regions in
    the forward phase (one per stage: a checkpointed stage's graph is its own) and 11 in
    the backward: 7 fills, the runs 2-5, 2-4 and 2-3 as one region each, and stage 2 alone;
    stage by stage the backward was 17 calls. Compiled, the regions compile at the first
    step and are re-used (no frame converted after it). With the GPT's dropout on, the
    stages of each run draw random numbers and replay their own RNG states: they run stage
    by stage (25 calls). The gradients are the plain model's at every step."""
    from torch._dynamo import utils as dynamo_utils
    from torch._dynamo.utils import counters

    case = make_gpt(blocks=3, batch=2, seq=8)
    assert len(case.names) == 8
    model = case.model.train()
    if not dropout:
        for m in model.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
    ref = copy.deepcopy(model)
    plan = Plan("rotor", 0.0, 0, 0, PLAN)
    torch._dynamo.reset()
    counters.clear()
    net = torch.compile(plan.wrap(model), backend="aot_eager") if compiling else plan.wrap(model)
    calls, frames, graphs = [], [], []
    for _ in range(3):
        for m in (net, ref):
            m.zero_grad(set_to_none=True)
            torch.manual_seed(5)  # the same dropout masks
            n = [0]
            before = dynamo_utils.curr_frame
            with _counting(monkeypatch, n):
                case.loss_fn(m(*case.args, **case.kwargs), case.target).backward()
            if m is net:
                calls.append(n[0])
                frames.append(dynamo_utils.curr_frame - before)
        for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
            torch.testing.assert_close(b.grad, a.grad, msg=name)
        graphs.append(counters["stats"]["unique_graphs"])
    assert calls == [8 + (17 if dropout else 11)] * 3, calls
    if compiling:
        assert frames[1] == frames[2] == 0, frames
        assert graphs[0] == graphs[1] == graphs[2], graphs


def test_compiled_regions_hold_the_budget() -> None:
    """The smallest plan of a GPT chain recomputes from the chain input before each
    backward, runs of up to 4 stages; compiled, with its recomputations as regions, its
    measured peak stays within its budget (as test_memory_promise measures it) and its
    gradients are the plain model's."""
    model, x, y = gpt_like(vocab=64, width=16, blocks=4, seq=8, batch=2)
    ce = nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=1, warmup=1,
                             progress=False)
    p = chainplan.plan(prof, budget="min")
    runs = recomputation_runs(Program.of(p))
    assert max(r.last - r.first + 1 for r in runs) >= 3, runs
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    net = torch.compile(p.wrap(model), backend="aot_eager")
    got = chainplan.measure(net, x, loss_fn=ce, target=y, steps=2, store=False).peak_bytes
    assert got <= 1.05 * p.budget_bytes, (got, p.budget_bytes, p.peak_bytes)
    for m in (model, ref):
        m.zero_grad(set_to_none=True)
    ce(net(x), y).backward()
    ce(ref(x), y).backward()
    for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5, msg=name)
