"""Plans under autocast: recomputations run in the forward's autocast state, so gradients
equal the plain autocast run's, and the profile records the autocast dtype.

Regression (issue 9): recomputed stages ran in fp32 with autocast off (gradients differed by
5e-5 from the plain autocast run) and a profile taken under autocast was stored as float32.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

import chainplan
from chainplan.executors import planned
from tests.models import gpt_like


def test_recomputation_replays_autocast() -> None:
    model, x, y = gpt_like(vocab=256, width=32, blocks=4, seq=16, batch=2)
    ref = copy.deepcopy(model)
    ce = nn.CrossEntropyLoss()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=1, warmup=1,
                                 progress=False)
    dtype = chainplan.query(f"SELECT dtype FROM runs WHERE run_id = {prof.run_id}")
    assert dtype.to_pylist() == [{"dtype": "autocast:bfloat16"}]

    p = chainplan.plan(prof, budget="min")
    net = p.wrap(model)
    assert planned(net).executor(x).recomputed, "the smallest plan recomputes some stages"  # type: ignore[union-attr]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out_ref = ref(x)
        loss_ref = ce(out_ref, y)
        out = net(x)
        loss = ce(out, y)
    assert out.dtype == out_ref.dtype == torch.bfloat16
    # The backward runs outside the autocast block, as in a usual training loop.
    loss_ref.backward()
    loss.backward()
    torch.testing.assert_close(loss, loss_ref, rtol=0, atol=0)
    for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
        assert b.grad is not None and a.grad is not None, name
        torch.testing.assert_close(b.grad, a.grad, rtol=0, atol=0, msg=name)


def test_profile_without_autocast_records_sample_dtype() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    prof = chainplan.profile(model, torch.randn(3, 4, dtype=torch.float64), repeats=1,
                             warmup=0, progress=False)
    dtype = chainplan.query(f"SELECT dtype FROM runs WHERE run_id = {prof.run_id}")
    assert dtype.to_pylist() == [{"dtype": "float64"}]


def test_not_a_leaf_is_tracked_inside_the_backward() -> None:
    """A recomputation runs in the backward, gradients off: the input's alias must still be
    tracked by autograd, or the stage saves other tensors than its first forward did (the
    Llama RMSNorm stages under bf16, python/tests/graph/test_libraries.py)."""
    from chainplan.runtime.recompute import not_a_leaf

    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        v = not_a_leaf(x)
    assert v.requires_grad and v.grad_fn is not None
    (v * v).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))
