"""Every executor gives the plain model's loss, gradients and BatchNorm statistics."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from chainplan import _bind
from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.schedule import Plan
from chainplan.stages import flatten_stages
from tests.models import MODELS
from tests.planning import plan_chain


def synthetic_chain(stages: list[nn.Module], x: torch.Tensor) -> str:
    """A chain whose sizes are the stages' real output sizes (times 1, ā = 3a), so the
    planner's sequences at different budgets use every kind of operation."""
    doc = {"format": "chainplan.chain/v1", "input_bytes": x.numel() * x.element_size(),
           "stages": []}
    with torch.no_grad():
        for i, stage in enumerate(stages):
            x = stage(x)
            a = x.numel() * x.element_size()
            doc["stages"].append({"name": f"s{i + 1}", "fwd_time": 1.0, "bwd_time": 2.0,
                                  "out_bytes": a, "saved_bytes": 3 * a, "fwd_tmp_bytes": 0,
                                  "bwd_tmp_bytes": 0})
    return json.dumps(doc)


def plans_for(stages: list[nn.Module], x: torch.Tensor) -> list[Plan]:
    """Plans of every algorithm at the smallest, a middle and a large budget."""
    chain = synthetic_chain(stages, x)
    out = []
    for algo in ["rotor", "revolve", "sequential", "store-all"]:
        lo = _bind.min_budget({"chain": chain}, {"algo": algo, "slots": 500})
        hi = _bind.min_budget({"chain": chain}, {"algo": "store-all"})
        for budget in sorted({lo, (lo + hi) // 2, max(lo, hi)}):
            out.append(Plan.from_json(plan_chain(chain, {"algo": algo, "budget_bytes": budget})))
    return out


def step(model: nn.Module, x: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    x = x.clone().requires_grad_(True)
    loss = model(x).square().mean()
    loss.backward()
    assert x.grad is not None
    return loss.detach(), x.grad


@pytest.mark.parametrize("name", sorted(MODELS))
def test_transparency(name: str) -> None:
    model, x = MODELS[name]()
    model.train()
    plans = plans_for(flatten_stages(model), x)
    kinds = {op.kind for p in plans for op in p.sequence}
    assert kinds == {"F_all", "F_ck", "F_none", "B"}, kinds  # the plans exercise every op
    for p in plans:
        ref = copy.deepcopy(model)
        net_model = copy.deepcopy(model)
        net = CheckpointedChain(flatten_stages(net_model), p)
        for seed in (1, 2):  # two steps: running statistics move twice
            want_loss, want_dx = step(ref, x, seed)
            got_loss, got_dx = step(net, x, seed)
            torch.testing.assert_close(got_loss, want_loss, rtol=1e-6, atol=1e-7)
            torch.testing.assert_close(got_dx, want_dx, rtol=1e-5, atol=1e-6)
        for (n, pr), pn in zip(ref.named_parameters(), net_model.parameters(), strict=True):
            assert pn.grad is not None, f"{p.algo}: no gradient for {n}"
            torch.testing.assert_close(pn.grad, pr.grad, rtol=1e-5, atol=1e-6,
                                       msg=lambda m, n=n, p=p: f"{p.algo} {p}: {n}: {m}")
        for (n, br), bn in zip(ref.named_buffers(), net_model.buffers(), strict=True):
            torch.testing.assert_close(bn, br, rtol=1e-6, atol=1e-7,
                                       msg=lambda m, n=n, p=p: f"{p.algo}: buffer {n}: {m}")


def test_no_grad_runs_plain() -> None:
    model, x = MODELS["vgg"]()
    stages = flatten_stages(model)
    p = plans_for(stages, x)[0]
    net = CheckpointedChain(stages, p)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(net(x), model(x))


def test_integer_input() -> None:
    """A chain whose first stage takes token ids (no input gradient) still trains."""
    model = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    ids = torch.randint(0, 50, (3, 5))
    stages = flatten_stages(model)
    ref = copy.deepcopy(model)
    chain = synthetic_chain(stages[1:], torch.zeros(3, 5, 16))
    doc = json.loads(chain)
    doc["stages"].insert(0, dict(doc["stages"][0], name="emb"))
    lo = _bind.min_budget({"chain": json.dumps(doc)}, {"algo": "rotor", "slots": 500})
    p = Plan.from_json(plan_chain(json.dumps(doc), {"algo": "rotor", "budget_bytes": lo}))
    net = CheckpointedChain(stages, p)
    net(ids).sum().backward()
    ref(ids).sum().backward()
    for pr, pn in zip(ref.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(pn.grad, pr.grad)
