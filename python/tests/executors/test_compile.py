"""A wrapped plan compiles: ``torch.compile(plan.wrap(model))`` trains with the plain model's
gradients. The executor's Python (runner, custom autograd nodes) makes graph breaks, and the
stages between them are compiled (AOTAutograd here, the backend that traces forward and
backward graphs without generating code, to keep the test fast)."""

from __future__ import annotations

import copy
import logging

import pytest
import torch
from torch import nn

import chainplan
from chainplan.graph.stage import GraphStage
from tests.graph.models import CASES
from tests.graph.test_options import _kept_sets, _plan, _recomputed_plan, _reference, _step
from tests.models import gpt_like


def test_compiled_wrapped_plan_trains_like_the_model() -> None:
    model, x, y = gpt_like(vocab=256, width=32, blocks=3, seq=16, batch=2)
    ref = copy.deepcopy(model)
    ce = nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=1, warmup=0,
                             progress=False)
    p = chainplan.plan(prof, budget="min")
    net = torch.compile(p.wrap(model), backend="aot_eager")
    for _ in range(2):
        ce(net(x), y).backward()
        ce(ref(x), y).backward()
    for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, msg=name)


def test_compiled_plan_on_a_captured_model() -> None:
    """``torch.compile(plan.wrap(model))`` on a model captured from its graph (a GPT with
    dropout, a mask argument, blocks cut at their residual addition) trains like the model
    from its first call on, and compiles once: the later steps, and the recomputations that
    run during their backward, reuse what the first step compiled (no recompilation)."""
    from torch._dynamo import utils as dynamo_utils
    from torch._dynamo.utils import counters

    from tests.graph.models import make_gpt

    case = make_gpt(blocks=1, batch=2, seq=8)
    model = case.model
    ref = copy.deepcopy(model)
    prof = chainplan.profile(model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             repeats=1, warmup=0, progress=False, spread_warning=None,
                             **case.kwargs)
    plan = chainplan.plan(prof, budget="min")
    assert len(plan.sequence) > 2 * (prof.num_stages + 1)  # it recomputes
    torch._dynamo.reset()
    counters.clear()
    recompiles: list[str] = []  # what Dynamo's "recompiles" log says
    handler = _Collect(recompiles)
    log = logging.getLogger("torch._dynamo.guards.__recompiles")
    torch._logging.set_logs(recompiles=True)
    log.addHandler(handler)
    try:
        net = torch.compile(plan.wrap(model), backend="eager")  # Dynamo alone: it recompiles
        graphs = []
        frames = []  # frames Dynamo was asked to convert, per step
        for _ in range(3):  # the first call compiles; the next ones must not
            for m in (net, ref):
                torch.manual_seed(5)  # the same dropout masks
                before = dynamo_utils.curr_frame
                case.loss_fn(m(*case.args, **case.kwargs), case.target).backward()
                if m is net:
                    frames.append(dynamo_utils.curr_frame - before)
            for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
                torch.testing.assert_close(b.grad, a.grad, msg=name)
            graphs.append(counters["stats"]["unique_graphs"])
    finally:
        log.removeHandler(handler)
        torch._logging.set_logs()
    assert not recompiles, recompiles
    assert graphs[0] > 0, "nothing was compiled"
    assert graphs[1] == graphs[2] == graphs[0], graphs  # nothing compiled after the first
    assert graphs[0] <= 2 * (prof.num_stages + 2), graphs  # about one graph per stage
    # Once compiled, a step runs cached code only: Dynamo is not asked about any frame. With
    # the executor's entry points skipped by torch._dynamo.disable(recursive=False), every
    # call of one (each stage call, each recomputation) went through Dynamo's frame
    # conversion again, 0.5 ms each (issue 19: a compiled plan ran slower than eager).
    assert frames[1] == frames[2] == 0, frames


@pytest.mark.parametrize("where", ["forward", "recomputed"])
def test_compiled_plan_with_an_option(where: str) -> None:
    """An operation-level option under ``torch.compile`` with a backend that partitions the
    stage's graph (AOTAutograd: what inductor does on CUDA): the compiled stage saves other
    tensors than its eager graph, which the option's kept positions number. The executor
    runs the option keeping nothing and recomputes the stage whole before its backward; the
    gradients are the plain model's, with the option in the first forward and in a
    recomputation (it raised a ScheduleError or an out-of-bounds view before)."""
    case = CASES["gpt"]()
    model = case.model.train()
    want, want_grads, chain, side, inputs = _reference(case)
    k = next(i for i, st in enumerate(chain.stages, 1) if isinstance(st, GraphStage)
             and "blocks.0." in st.stage_name)
    with side.scope():
        sets = _kept_sets(chain.stages[k - 1], inputs[k - 1].detach().requires_grad_(True))
    keep = sets[len(sets) // 2]
    assert keep, "a kept set that keeps something"
    make = _plan if where == "forward" else _recomputed_plan
    torch._dynamo.reset()
    net = torch.compile(make(len(chain.stages), k, keep).wrap(model), backend="aot_eager")
    for _ in range(2):  # the first call compiles, the second runs what it compiled
        model.zero_grad(set_to_none=True)
        got = _step(net, case)
        torch.testing.assert_close(got, want)
        for p, w in zip(model.parameters(), want_grads, strict=True):
            torch.testing.assert_close(p.grad, w, rtol=1e-4, atol=1e-5)


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__()
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())
