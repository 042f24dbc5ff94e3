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
from chainplan.executors.program import Program
from chainplan.executors.stretch import stretches
from chainplan.graph.chain import extract
from chainplan.graph.stage import GraphStage
from chainplan.schedule import Op, Plan
from tests.graph.models import CASES, Case, make_gpt
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


def test_compiled_declared_stages_never_trace_the_hooks() -> None:
    """A chain of torch.nn stages (convolution, BatchNorm, pooling), its smallest plan
    compiled: the stages run eagerly under Dynamo's callback (Dynamo does not compile
    torch.nn's own frames) and autograd calls the executor's saved-tensor hooks from there.
    Dynamo must never see them: it traced the hooks into graphs of their own, re-guarded on
    every saved tensor and recompiled per dtype (a pooling's int64 indices) up to its limit.
    Gradients and running statistics are the plain model's."""
    from torch._dynamo.convert_frame import input_codes

    def conv(i: int, o: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    model = nn.Sequential(conv(3, 8), conv(8, 8), nn.MaxPool2d(2), conv(8, 16), nn.Flatten(),
                          nn.Linear(16 * 8 * 8, 10))
    ref = copy.deepcopy(model)
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    ce = nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=1, warmup=0,
                             progress=False, spread_warning=None)
    p = chainplan.plan(prof, budget="min")
    assert any(op.kind == "F_ck" for op in p.sequence)  # stages run under the hooks
    torch._dynamo.reset()
    net = torch.compile(p.wrap(model), backend="aot_eager")
    for _ in range(2):
        for m in (net, ref):
            m.zero_grad(set_to_none=True)
            ce(m(x), y).backward()
        for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
            torch.testing.assert_close(b.grad, a.grad, msg=name)
        for (name, a), b in zip(ref.named_buffers(), model.buffers(), strict=True):
            torch.testing.assert_close(b, a, msg=name)
    seen = {c.co_filename for c in (w() for w in input_codes.seen) if c is not None}
    assert not any(f.endswith("runtime/saved.py") for f in seen), seen


def test_compiled_plan_on_a_captured_model() -> None:
    """``torch.compile(plan.wrap(model))`` on a model captured from its graph (a GPT with
    dropout, a mask argument, blocks cut at their residual addition) trains like the model
    from its first call on, and compiles once: the later steps, and the recomputations that
    run during their backward, reuse what the first step compiled (no recompilation)."""
    case = make_gpt(blocks=1, batch=2, seq=8)
    model = case.model
    prof = chainplan.profile(model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             repeats=1, warmup=0, progress=False, spread_warning=None,
                             **case.kwargs)
    plan = chainplan.plan(prof, budget="min")
    assert len(plan.sequence) > 2 * (prof.num_stages + 1)  # it recomputes
    recompiles: list[str] = []  # what Dynamo's "recompiles" log says
    handler = _Collect(recompiles)
    log = logging.getLogger("torch._dynamo.guards.__recompiles")
    torch._logging.set_logs(recompiles=True)
    log.addHandler(handler)
    try:  # Dynamo alone: it recompiles; the first call compiles, the next ones must not
        graphs, frames, _ = _compiled_steps(plan, case, 3, backend="eager")
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


def _ops(text: str) -> tuple[Op, ...]:
    """``"F_all1 F_ck2 B2"`` as operations."""
    return tuple(Op(w.rstrip("0123456789"), int(w[len(w.rstrip("0123456789")):]))
                 for w in text.split())


def _compiled_steps(plan: Plan, case: Case, steps: int,
                    backend: str = "aot_eager") -> tuple[list[int], list[int], int]:
    """Train ``torch.compile(plan.wrap(model))`` (by default with AOTAutograd, which
    partitions as inductor does) for ``steps`` steps beside the plain model (a copy made
    now), checking the gradients at each; return the
    graphs Dynamo made so far and the frames it was asked to convert, per step, and the
    compiled regions AOTAutograd made."""
    from torch._dynamo import utils as dynamo_utils
    from torch._dynamo.utils import counters

    model = case.model.train()
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    counters.clear()
    net = torch.compile(plan.wrap(model), backend=backend)
    graphs, frames = [], []
    for _ in range(steps):
        for m in (net, ref):
            m.zero_grad(set_to_none=True)
            torch.manual_seed(5)  # the same dropout masks
            before = dynamo_utils.curr_frame
            case.loss_fn(m(*case.args, **case.kwargs), case.target).backward()
            if m is net:
                frames.append(dynamo_utils.curr_frame - before)
        for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
            torch.testing.assert_close(b.grad, a.grad, msg=name)
        graphs.append(counters["stats"]["unique_graphs"])
    return graphs, frames, counters["aot_autograd"]["total"]


def test_a_compiled_store_all_plan_is_one_region() -> None:
    """A plan that recomputes nothing, compiled, is one compiled region, as
    ``torch.compile(model)`` is: one Dynamo graph, one AOTAutograd forward and backward,
    made at the first step and reused. Compiled stage by stage it was one region per stage
    (6 here), each with its own guards, runtime wrappers and autograd node: on CUDA the GPT
    of bench/promise ran 1.95x the eager plain step where torch.compile(model) ran 1.0x."""
    case = make_gpt(blocks=2, batch=2, seq=8)
    n = len(case.names)
    seq = " ".join(f"F_all{k}" for k in range(1, n + 2)) + " " + " ".join(
        f"B{k}" for k in range(n + 1, 0, -1))
    plan = Plan("store-all", 0.0, 0, 0, _ops(seq))
    graphs, frames, regions = _compiled_steps(plan, case, 3)
    assert graphs == [1, 1, 1], graphs
    assert regions == 1, regions
    assert frames[1] == frames[2] == 0, frames


def test_store_all_stretches_around_a_recomputed_stage() -> None:
    """Stages 1-2 and 4-6 keep everything, stage 3 is checkpointed and recomputed before its
    backward: the stretches 1-2 and 4-6 are one region each, stage 3 its own (its forward
    drops what it saves, its recomputation fills it: the same compiled code), and the
    gradients are the plain model's."""
    case = make_gpt(blocks=2, batch=2, seq=8)
    assert len(case.names) == 6
    plan = Plan("rotor", 0.0, 0, 0, _ops(
        "F_all1 F_all2 F_ck3 F_all4 F_all5 F_all6 F_all7 B7 B6 B5 B4 F_all3 B3 B2 B1"))
    program = Program.of(plan)
    runs = stretches(program, list(extract(case.model, case.args, case.kwargs).stages))
    assert {k: r.last for k, r in runs.items()} == {1: 2, 4: 6}
    graphs, frames, regions = _compiled_steps(plan, case, 2)
    assert graphs == [3, 3], graphs
    assert regions == 3, regions
    assert frames[1] == 0, frames


def test_stretches_end_where_the_executor_acts() -> None:
    """No stretch takes in a stage run with an option, a stage run forward again, a stage
    whose backward has recomputations before it (unless it ends the stretch), or a stage
    whose activation is read later than by the next stage; a stretch has two stages or
    more."""
    stages = [nn.Identity() for _ in range(8)]
    # Stage 5's recomputation before B5 reads a_4: the stretch 3-4 ends at 4. Stage 7 has an
    # option. Stage 8 stands alone after it.
    plan = Plan("rotor", 0.0, 0, 0, (
        *_ops("F_all1 F_ck2 F_all3 F_all4 F_ck5 F_all6"), Op("F_all", 7, 1),
        *_ops("F_all8 F_all9 B9 B8 B7 B6 F_all5 B5 B4 B3 F_all2 B2 B1")),
        choices={7: (0,)})
    runs = stretches(Program.of(plan), stages)
    assert {k: r.last for k, r in runs.items()} == {3: 4}
    # Stage 1 is recomputed before B2: stage 2's pre-hook must be on its own output.
    plan = Plan("rotor", 0.0, 0, 0,
                _ops("F_ck1 F_all2 F_all3 F_all4 F_all5 B5 B4 B3 F_all1 B2 B1"))
    runs = stretches(Program.of(plan), stages[:4])
    assert {k: r.last for k, r in runs.items()} == {3: 4}
    # Every stage stored: one stretch of all of them.
    plan = Plan("store-all", 0.0, 0, 0, _ops(
        " ".join(f"F_all{k}" for k in range(1, 10)) + " "
        + " ".join(f"B{k}" for k in range(9, 0, -1))))
    runs = stretches(Program.of(plan), stages)
    assert {k: r.last for k, r in runs.items()} == {1: 8}
    x = torch.randn(3)
    box = [x]
    torch.testing.assert_close(runs[1](None, box), x)
    assert box == []  # handed over, and emptied by the region (executors/stretch.py)
