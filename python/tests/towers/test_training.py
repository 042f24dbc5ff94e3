"""Models of towers joined at the loss train with multichain plans as the plain model does.

A two-tower contrastive model (image and text towers of unequal depth, a contrastive loss
with a learned temperature) and a triplet network (one tower on three inputs) are profiled,
planned at three budgets (the smallest, a middle one and one where nothing is recomputed),
and run: the loss and every gradient equal plain PyTorch's, and the measured activation
peak of a training step stays within the plan's budget.

Tolerance: a tower shared by several inputs (the triplet network) sums its branches'
weight gradients in the plan's order rather than autograd's, so float32 gradients may differ
in the last bits: ``rtol=1e-5, atol=1e-7`` (in float64 they agree to 1e-12, see
``test_shared_tower_sums_in_another_order``). Separate towers sum nothing across branches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
import torch
from torch import nn

import chainplan
from chainplan.executors import planned
from chainplan.profiler.memory import MemoryProbe
from chainplan.towers.profile import TowersProfile
from tests.towers.models import DualEncoder, Triplet, dual_batch, triplet_batch

Step = Callable[[nn.Module], torch.Tensor]


def grads_of(model: nn.Module, step: Step) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = step(model)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                           if p.grad is not None}


def budgets(prof: chainplan.Profile) -> list[int]:
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="1TiB").peak_bytes  # no recomputation
    return [lo, (lo + hi) // 2, hi]


def peak_of(net: nn.Module, step: Step, inputs: tuple[torch.Tensor, ...]) -> int:
    """The measured activation peak of one training step, as ``chainplan.measure`` takes it
    (the inputs counted, the weight gradients already allocated by an earlier step, which
    was its warm-up) but without its extra steps: the tests' time budget is small."""
    with MemoryProbe(device="cpu") as probe:
        step(net).backward()  # type: ignore[no-untyped-call]
    return probe.peak_bytes + sum(x.numel() * x.element_size() for x in inputs)


def check(model: nn.Module, step: Step, prof: chainplan.Profile, *,
          inputs: tuple[torch.Tensor, ...], rtol: float = 1e-5,
          atol: float = 1e-7) -> list[chainplan.Plan]:
    want_loss, want = grads_of(model, step)
    plans = []
    for budget in budgets(prof):
        plan = chainplan.plan(prof, budget=budget)
        assert plan.multichain is not None and plan.peak_bytes <= budget
        net = plan.wrap(model)
        loss, got = grads_of(net, step)
        torch.testing.assert_close(loss, want_loss, rtol=rtol, atol=atol)
        assert got.keys() == want.keys()
        for name in want:
            torch.testing.assert_close(got[name], want[name], rtol=rtol, atol=atol, msg=name)
        peak = peak_of(net, step, inputs)
        assert peak <= budget, (plan.chosen, budget, peak, plan.peak_bytes)
        plans.append(plan)
    return plans


def test_dual_encoder() -> None:
    model = DualEncoder()
    images, tokens = dual_batch()
    prof = chainplan.profile(model, images, tokens, repeats=1, warmup=0, progress=False)
    assert prof.tower_stages == (8, 4)  # Linear, 6 blocks, Linear; Embedding, 2 layers, Pool

    def step(m: nn.Module) -> torch.Tensor:
        out: torch.Tensor = m(images, tokens)
        return out

    plans = check(model, step, prof, inputs=(images, tokens))
    assert any(op.kind == "F_none" for p in plans[:2] for op in p.sequence)  # it recomputes


def test_triplet() -> None:
    model = Triplet()
    a, p, n = triplet_batch()
    loss_fn = nn.TripletMarginLoss()
    prof = chainplan.profile(model, a, p, n, loss_fn=loss_fn, repeats=1, warmup=0, progress=False)
    assert prof.tower_stages == (7,) and prof.branch_stages == (7, 7, 7)  # profiled once

    def step(m: nn.Module) -> torch.Tensor:
        out: torch.Tensor = loss_fn(*m(a, p, n))
        return out

    check(model, step, prof, inputs=(a, p, n))


def test_input_gradients() -> None:
    """Inputs that need gradients (an upstream embedding, say) get them: the plan keeps
    their gradients (keep_input_grad) and hands them to autograd."""
    model = Triplet()
    xs = [x.requires_grad_(True) for x in triplet_batch()]
    loss_fn = nn.TripletMarginLoss()
    prof = chainplan.profile(model, *xs, loss_fn=loss_fn, repeats=1, warmup=0, progress=False)
    plan = chainplan.plan(prof, budget="min")
    assert plan.multichain is not None and plan.multichain.keep_input_grad == (True, True, True)
    loss_fn(*model(*xs)).backward()
    want = [x.grad.clone() for x in xs]  # type: ignore[union-attr]
    for x in xs:
        x.grad = None
    loss_fn(*plan.wrap(model)(*xs)).backward()
    for x, w in zip(xs, want, strict=True):
        torch.testing.assert_close(x.grad, w, rtol=1e-5, atol=1e-7)


def test_shared_tower_sums_in_another_order() -> None:
    """In float64 the shared tower's gradients agree to 1e-12: the float32 differences are
    the summation order's."""
    model = Triplet().double()
    xs = [x.double() for x in triplet_batch()]
    loss_fn = nn.TripletMarginLoss()
    prof = chainplan.profile(model, *xs, loss_fn=loss_fn, repeats=1, warmup=0, progress=False)
    net = chainplan.plan(prof, budget="min").wrap(model)
    _, want = grads_of(model, lambda m: loss_fn(*m(*xs)))
    _, got = grads_of(net, lambda m: loss_fn(*m(*xs)))
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-12, atol=1e-14, msg=name)


def test_checkpointed() -> None:
    """Checkpointed takes a model of towers as written: profiled, planned (multichain by
    default) and run at the first call."""
    model = Triplet()
    a, p, n = triplet_batch()
    loss_fn = nn.TripletMarginLoss()
    net = chainplan.Checkpointed(model, budget="min", loss_fn=loss_fn, repeats=1, warmup=0)
    _, got = grads_of(net, lambda m: loss_fn(*m(a, p, n)))
    _, want = grads_of(model, lambda m: loss_fn(*m(a, p, n)))
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-7, msg=name)
    (plan,) = planned(net).plans
    assert plan.algo == "multichain" and plan.plan_id is not None
    # chainplan.measure finds the view's plan and calls loss_fn(a, p, n) as profiled.
    ex = chainplan.measure(net, a, p, n, loss_fn=loss_fn, steps=1, store=False)
    assert ex.predicted_peak_bytes == plan.peak_bytes and ex.peak_bytes <= plan.budget_bytes
    with torch.no_grad():  # the plain model
        torch.testing.assert_close(net(a, p, n)[0], model(a, p, n)[0])


def test_stored_profile_reused(caplog: pytest.LogCaptureFixture) -> None:
    """The stored profile of the same call of towers is reused (as a new process would find
    it), by profile() and by a new Checkpointed view; another text length is not the same
    call."""
    model = DualEncoder(image_blocks=2, text_blocks=1)
    images, tokens = dual_batch(8)
    first = chainplan.profile(model, images, tokens, repeats=1, warmup=0, progress=False)
    again = chainplan.profile(model, images, tokens, repeats=1, warmup=0, progress=False)
    assert not first.reused and again.reused and again.run_id == first.run_id
    assert isinstance(again, TowersProfile) and again.tower_stages == first.tower_stages
    assert chainplan.plan(again, budget="min").multichain is not None
    longer = chainplan.profile(model, images, tokens.repeat(1, 2), repeats=1, warmup=0,
                               progress=False)
    assert not longer.reused and longer.run_id != first.run_id
    with caplog.at_level(logging.INFO, logger="chainplan"):
        net = chainplan.Checkpointed(model, budget="min", repeats=1, warmup=0)
        net(images, tokens).backward()
    assert f"reused the stored profile of the same call (run {first.run_id})" in caplog.text


def test_single_chain_algorithms_refuse_towers() -> None:
    model = Triplet()
    prof = chainplan.profile(model, *triplet_batch(), repeats=1, warmup=0, progress=False)
    with pytest.raises(chainplan.ChainplanError, match="towers joined at the loss"):
        chainplan.plan(prof, budget="min", algo="rotor")
    assert chainplan.plan(prof, budget="min", algo="multichain-linear").multichain is not None
    # An unstored profile plans from its file.
    unstored = chainplan.profile(model, *triplet_batch(), repeats=1, warmup=0, progress=False,
                                 ingest=False)
    assert chainplan.plan(unstored, budget="min").multichain is not None


def test_a_plan_for_other_towers_is_refused() -> None:
    """A plan runs only on the towers it was made for: the number of towers and of their
    stages are checked at the first call."""
    model = Triplet()
    prof = chainplan.profile(model, *triplet_batch(), repeats=1, warmup=0, progress=False)
    plan = chainplan.plan(prof, budget="min")
    with pytest.raises(chainplan.ChainplanError, match="the plan is for 3 towers"):
        plan.wrap(DualEncoder())(*dual_batch())
    with pytest.raises(chainplan.ChainplanError,
                       match="gives branch 1 .* 7 stages, the tower has 8"):
        plan.wrap(Triplet(blocks=6))(*triplet_batch())
