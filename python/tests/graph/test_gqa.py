"""Grouped-query attention recomputes bit for bit (issue 35).

transformers' causal language models look for packed sequences in their position ids
before they let SDPA use ``is_causal`` and ``enable_gqa``; under ``torch.export`` the
traced position ids have no values, and the graph took the packed path: an explicit mask
and the key/value heads repeated, whose gradients the expand's backward sums in another
order than SDPA's own kernel (1e-8 to 5e-8 in fp32 on Mistral, Qwen2 and Phi with 8 query
and 2 key/value heads). The capture now computes the position ids where they are a
constant of the trace (:mod:`chainplan.graph.eager`), and the chain runs SDPA as eager
does. Position ids passed by the caller stay an input: the graph keeps the packed path,
within the tolerance docs/executors.md states. Tiny configurations, random weights, CPU.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import chainplan
from chainplan.graph.chain import extract
from chainplan.graph.eager import constant_value
from tests.graph import libraries  # noqa: F401  (the offline environment, set before import)

transformers = importlib.import_module("transformers")

VOCAB, SEQ, BATCH = 128, 32, 2
FAMILIES = {"mistral": "Mistral", "phi": "Phi", "qwen2": "Qwen2"}

#: Position ids passed by the caller: the packed path, summed in another order
#: (4.5e-8 measured on Mistral; docs/executors.md, "Library models").
PASSED_POSITIONS_ATOL = 1e-6


def build(family: str) -> nn.Module:
    prefix = FAMILIES[family]
    config = getattr(transformers, f"{prefix}Config")(
        num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=8,
        num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=SEQ,
        bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model: nn.Module = getattr(transformers, f"{prefix}ForCausalLM")(config)
    return model.train()


def grads(model: nn.Module, net: nn.Module, call: dict[str, Any]) -> list[torch.Tensor]:
    """The gradients of ``model``'s parameters after one step of ``net`` (the model, or
    a plan's wrap of it). The loss is the script's, on the logits: the head stays
    PyTorch's, whose products are the plain model's (a loss computed inside the model is
    fused with the head, equal within rounding: docs/executors.md)."""
    model.zero_grad(set_to_none=True)
    logits = net(**call).logits
    F.cross_entropy(logits.flatten(0, 1), call["input_ids"].flatten()).backward()
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def plain(model: nn.Module, call: dict[str, Any]) -> list[torch.Tensor]:
    """The plain model's gradients, from a copy."""
    ref = copy.deepcopy(model)
    return grads(ref, ref, call)


def call() -> dict[str, Any]:
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    return {"input_ids": ids}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_grouped_query_attention_recomputes_bit_for_bit(family: str) -> None:
    model, kw = build(family), call()
    code = "".join(s.gm.code for s in extract(model, (), kw).stages)
    assert "enable_gqa = True" in code and "repeat" not in code, family
    want = plain(model, kw)
    prof = chainplan.profile(model, **kw, repeats=1, warmup=0, progress=False, ingest=False,
                             spread_warning=None)
    for algo in ("rotor-ops", "store-all"):
        plan = chainplan.plan(prof, budget="min", algo=algo)
        got = grads(model, plan.wrap(model), kw)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert torch.equal(g, w), (family, algo, (g - w).abs().max())


def test_passed_position_ids_keep_the_general_path() -> None:
    """Position ids from the caller may be packed at the next call: the graph keeps the
    mask made from their values and the repeated heads, equal to eager within the stated
    tolerance."""
    model, kw = build("mistral"), call()
    kw["position_ids"] = torch.arange(SEQ).unsqueeze(0).expand(BATCH, -1)
    code = "".join(s.gm.code for s in extract(model, (), kw).stages)
    assert "enable_gqa = True" not in code
    want = plain(model, kw)
    net = chainplan.Checkpointed(model, budget="min", repeats=1, warmup=0, reuse=False)
    for g, w in zip(grads(model, net, kw), want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=PASSED_POSITIONS_ATOL)


def test_constant_values_of_a_trace() -> None:
    """What the capture computes: a value of the trace made from constants alone; not one
    read from an input, nor one drawing random numbers (computing it would draw again)."""
    seen: dict[str, torch.Tensor | None] = {}

    class Probe(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen["arange"] = constant_value(torch.arange(x.shape[1]).unsqueeze(0) + 1)
            seen["input"] = constant_value(x * 2)
            seen["random"] = constant_value(torch.rand(3) + 1)
            return x + 1

    torch.export.export(Probe(), (torch.randn(2, 5),), strict=False)
    arange = seen["arange"]
    assert arange is not None and not isinstance(arange, torch._subclasses.FakeTensor)
    assert torch.equal(arange, torch.arange(1, 6).unsqueeze(0))
    assert seen["input"] is None and seen["random"] is None
    assert constant_value(torch.ones(2)) is None  # outside a trace
