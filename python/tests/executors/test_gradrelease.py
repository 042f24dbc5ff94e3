"""Backward steps free δ_k after its first use, and never a gradient still in use.

chainplan.gradrelease releases the storage of a stage's output gradient once the stage's
last operation has consumed it. Each case here would give wrong gradients (or crash) if
a gradient that is passed on were freed: stages whose backward hands δ_k on unchanged
(Identity, a residual addition, Flatten's view) and a loss whose gradient other branches of
the user's graph share.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.autograd.graph import get_gradient_edge

import chainplan
from chainplan.gradrelease import backward_step


class Residual(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(self.fc(x))


def chain() -> nn.Sequential:
    return nn.Sequential(
        nn.Unflatten(1, (4, 8)), nn.Flatten(), nn.Linear(32, 32), nn.Identity(), Residual(32),
        nn.ReLU(), nn.Identity(), Residual(32), nn.Flatten(), nn.Linear(32, 32), nn.Sigmoid())


def grads(model: nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("shared_loss", [False, True])
def test_gradients_exact_at_every_budget(shared_loss: bool) -> None:
    model = chain()
    x = torch.randn(16, 32)

    def loss_of(out: torch.Tensor) -> torch.Tensor:
        if shared_loss:  # two branches read the same output gradient
            return out.sum() + out.pow(2).sum()
        return out.pow(2).mean()

    loss_of(model(x)).backward()
    want = grads(model)
    prof = chainplan.profile(model, x, loss_fn=lambda o, _: loss_of(o), target=x,
                             repeats=1, warmup=0, progress=False)
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    for budget in (lo, (lo + hi) // 2, hi):
        model.zero_grad(set_to_none=True)
        loss_of(chainplan.plan(prof, budget=budget).wrap(model)(x)).backward()
        for g, w in zip(grads(model), want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-6)


def test_backward_step_frees_a_consumed_gradient_only() -> None:
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8)
    out = torch.tanh(x @ w)  # TanhBackward makes a new gradient: δ can go
    delta = torch.randn_like(out)
    backward_step(get_gradient_edge(out), delta, owned=True)
    assert delta.untyped_storage().nbytes() == 0
    assert w.grad is not None and torch.isfinite(w.grad).all()

    leaf = torch.randn(4, 8, requires_grad=True)
    out = leaf + 1  # AddBackward passes δ on unchanged: it must stay
    delta = torch.randn_like(out)
    backward_step(get_gradient_edge(out), delta, owned=True)
    assert delta.untyped_storage().nbytes() > 0
    torch.testing.assert_close(leaf.grad, delta)

    out = torch.tanh(x @ w)
    delta = torch.randn_like(out)
    backward_step(get_gradient_edge(out), delta, owned=False)  # not ours: left alone
    assert delta.untyped_storage().nbytes() > 0
