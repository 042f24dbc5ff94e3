"""A wrapped plan compiles: ``torch.compile(plan.wrap(model))`` trains with the plain model's
gradients. The executor's Python (runner, custom autograd nodes) makes graph breaks, and the
stages between them are compiled (AOTAutograd here, the backend that traces forward and
backward graphs without generating code, to keep the test fast)."""

from __future__ import annotations

import copy

import torch
from torch import nn

import chainplan
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
