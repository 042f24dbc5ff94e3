"""Issue 36, launch-bound overhead: in eager execution a run of store-all stages is one
straight-line graph (chainplan.executors.stretch), so a plan that recomputes nothing runs
a training step as one generated call, with no stage called on its own, and trains
bit-identically to the plain model."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from chainplan.executors import CheckpointedChain
from chainplan.graph.chain import extract
from chainplan.graph.stage import GraphStage
from chainplan.schedule import Plan
from tests.graph.models import CASES
from tests.graph.test_transparency import _calling, grads, plans_for, step, synthetic_chain


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of any stage's own forward (the per-stage path)."""
    calls = [0]
    forward = GraphStage.forward

    def counted(self: GraphStage, x: torch.Tensor) -> Any:
        calls[0] += 1
        return forward(self, x)

    monkeypatch.setattr(GraphStage, "forward", counted)
    return calls


def _plan(name: str, algo: str) -> tuple[Any, Any, Plan]:
    case = CASES[name]()
    case.model.train()
    chain = extract(case.model, case.args, case.kwargs)
    plans = {p.algo: p for p in plans_for(synthetic_chain(chain, case))}
    return case, chain, plans[algo]


@pytest.mark.parametrize("name", ["gpt", "llama", "resnet"])
def test_store_all_step_is_one_straight_line_call(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    case, chain, plan = _plan(name, "store-all")
    want_loss = step(case.model, case, seed=3)
    want = [g.clone() if g is not None else None for g in grads(case)]
    case.model.zero_grad(set_to_none=True)
    executor = CheckpointedChain(chain.stages, plan)
    calls = _counting(monkeypatch)
    got_loss = step(_calling(chain, executor), case, seed=3)
    assert calls[0] == 0, f"{calls[0]} stage calls in a store-all step of {name}"
    (runs,) = executor._stretches.values()
    assert list(runs) == [1] and runs[1].last == len(chain.stages) and runs[1].inlined
    # one graph: the stages' operations, copied (not called as modules)
    assert not [n for n in runs[1].module.graph.nodes if n.op == "call_module"]
    assert torch.equal(got_loss, want_loss)
    for got, ref in zip(grads(case), want, strict=True):
        assert (got is None) == (ref is None)
        if ref is not None:
            assert got is not None and torch.equal(got, ref), name


def test_a_recomputing_plan_runs_its_store_all_stretches_inlined(
        monkeypatch: pytest.MonkeyPatch) -> None:
    case, chain, plan = _plan("gpt", "rotor")
    ops = {op.kind for op in plan.sequence}
    assert "F_ck" in ops, plan.sequence  # the plan recomputes
    want_loss = step(case.model, case, seed=5)
    want = [g.clone() if g is not None else None for g in grads(case)]
    case.model.zero_grad(set_to_none=True)
    executor = CheckpointedChain(chain.stages, plan)
    calls = _counting(monkeypatch)
    got_loss = step(_calling(chain, executor), case, seed=5)
    (runs,) = executor._stretches.values()
    inlined = sum(r.last - r.first + 1 for r in runs.values() if r.inlined)
    forwards = sum(1 for op in plan.sequence if op.kind != "B" and op.stage <= len(chain.stages))
    assert inlined > 0
    assert calls[0] == forwards - inlined  # the stretches' stages are not called alone
    assert torch.equal(got_loss, want_loss)
    for got, ref in zip(grads(case), want, strict=True):
        if ref is not None:
            assert got is not None
            torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
