"""The user-facing calls on a model as written (the GPT with a ModuleList, a mask argument
and tied embeddings): profile, summary, plan(...).wrap, Checkpointed, measure."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import ScheduleError
from chainplan.executors import planned
from chainplan.executors.graphplan import GraphPlan
from chainplan.graph.capture import CaptureError
from chainplan.shapecheck import ShapeWarning
from tests.graph.models import CASES, Case, make_gpt


def train_step(net: nn.Module, case: Case, seed: int = 3) -> torch.Tensor:
    torch.manual_seed(seed)
    loss = case.loss_fn(net(*case.args, **case.kwargs), case.target)
    loss.backward()
    return loss.detach()


def test_profile_plan_wrap() -> None:
    case = CASES["gpt"]()
    model = case.model
    prof = chainplan.profile(model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             repeats=1, warmup=1, progress=False, spread_warning=None,
                             **case.kwargs)
    assert list(prof.stage_names) == case.names
    assert prof.side_bytes == 16 * 16  # the bool mask, once
    text = prof.summary()
    assert "blocks.0.ln1+blocks.0.attn" in text and "   9  blocks.3.ln2+...+ln_f" in text
    assert "mask (argument): bool [16, 16], 256 B" in text
    rows = [r for r in prof.rows if r.stage_kind == "stage"]
    assert all(r.fwd_tmp_bytes is not None and r.fwd_tmp_bytes >= 256 for r in rows)

    reference = copy.deepcopy(model)
    want = train_step(reference, case)
    net = chainplan.plan(prof, budget="min").wrap(model)
    assert isinstance(planned(net), GraphPlan) and isinstance(net, type(model))
    assert list(net.state_dict()) == list(model.state_dict())
    assert net.state_dict()["head.weight"].data_ptr() == model.wte.weight.data_ptr()
    assert torch.equal(train_step(net, case), want)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    model.eval()
    with torch.no_grad():
        assert torch.equal(net(*case.args, **case.kwargs), model(*case.args, **case.kwargs))
    ex = chainplan.measure(net.train(), *case.args, loss_fn=case.loss_fn, target=case.target,
                           steps=1, **case.kwargs)
    assert ex.execution_id is not None and ex.peak_bytes > 0


def test_checkpointed_takes_the_model_as_written() -> None:
    case = CASES["mlp"]()
    model = case.model
    reference = copy.deepcopy(model)
    net = chainplan.Checkpointed(model, budget="min", loss_fn=case.loss_fn,
                                 target=case.target, repeats=1, warmup=1)
    assert list(net.state_dict()) == list(model.state_dict())
    for _ in range(2):  # profiled once, planned once
        want = train_step(reference, case)
        assert torch.equal(train_step(net, case), want)
    assert len(planned(net).plans) == 1  # type: ignore[union-attr]
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    case.kwargs["temperature"] = 3.0  # another value of a non-tensor argument: a new plan
    with pytest.warns(ShapeWarning, match="a new kind of input"):
        train_step(net, case)
    assert len(planned(net).plans) == 2  # type: ignore[union-attr]


def test_plan_for_another_split_is_refused() -> None:
    case = CASES["gpt"]()
    prof = chainplan.profile(case.model, *case.args, repeats=1, warmup=0, progress=False,
                             spread_warning=None, **case.kwargs)
    smaller = make_gpt(blocks=2)  # the same class with two blocks: seven stages
    net = chainplan.plan(prof, budget="min").wrap(smaller.model)
    with pytest.raises(ScheduleError, match="the plan is for 10 stages, but the chain "
                                            "extracted from GPT for this input has 7"):
        net(*smaller.args, **smaller.kwargs)


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while x.abs().max() > 1:  # data-dependent: the loop count depends on the values
            x = x / 2
        return self.fc(x)


def test_what_cannot_be_captured_is_refused_at_the_first_forward() -> None:
    net = chainplan.Checkpointed(Branchy(), budget="min")
    with pytest.raises(CaptureError, match="data-dependent control flow") as err:
        net(torch.randn(3, 4)).sum().backward()
    assert "while x.abs().max() > 1" in str(err.value)
    assert "declare the stages by hand instead: an nn.Sequential" in str(err.value)
