"""Issue 35, item 1: a HuggingFace causal language model called as its users call it,
``model(input_ids=ids, labels=ids)``, trains through chainplan with its head fused with its
loss (:mod:`chainplan.graph.fuseloss`): the plain model's loss and gradients within fp32
rounding, ``logits`` None unless ``keep_logits=True`` asks for them, the model's own loss
options respected (shifted labels, ``ignore_index``, ``num_items_in_batch``, soft-capping,
a logit scale, tied embeddings) or refused naming the option, and a smallest plan that
saves at least one logits tensor against the same model's plan with PyTorch's head.

Tolerances (fp32): the fused head sums the weight's gradient chunk by chunk and takes the
log-sum-exp from the softmax, so the loss is within 1e-6 relative of PyTorch's and every
gradient entry within 1e-5 of the model's largest (measured: 5e-7 to 9e-7 over 25
families, ``bench/libraries/fused_heads.py``)."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import chainplan
from chainplan.graph.capture import CaptureError
from chainplan.graph.chain import extract

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

FAST: dict[str, Any] = {"repeats": 1, "warmup": 0}
LOSS_RTOL, GRAD_TOL = 1e-6, 1e-5


def llama(vocab: int = 512, **extra: Any) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(
        num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
        num_key_value_heads=2, vocab_size=vocab, max_position_embeddings=64, bos_token_id=0,
        eos_token_id=0, **extra)).train()


def gpt2() -> nn.Module:
    """Tied embeddings: the head's weight is the token embedding's."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=512,
                                       n_positions=64, bos_token_id=0, eos_token_id=0,
                                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    assert model.lm_head.weight is model.transformer.wte.weight
    return model.train()


def gemma2() -> nn.Module:
    """Logit soft-capping (final_logit_softcapping) and tied embeddings."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    return Gemma2ForCausalLM(Gemma2Config(
        num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, vocab_size=512, max_position_embeddings=64,
        final_logit_softcapping=5.0, attn_implementation="eager")).train()


def cohere() -> nn.Module:
    """A constant scale of the logits (logit_scale)."""
    from transformers import CohereConfig, CohereForCausalLM

    return CohereForCausalLM(CohereConfig(
        num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
        num_key_value_heads=2, vocab_size=512, max_position_embeddings=64,
        logit_scale=0.25)).train()


def _ids(vocab: int = 512, batch: int = 2, seq: int = 16) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq))


def close_grads(model: nn.Module, ref: nn.Module) -> None:
    """Every gradient within GRAD_TOL of the largest gradient entry of the plain model."""
    scale = max(float(q.grad.abs().max()) for q in ref.parameters() if q.grad is not None)
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        if q.grad is None:
            assert p.grad is None, name
            continue
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=GRAD_TOL * scale, msg=name)


def _step(net: nn.Module, **call: Any) -> Any:
    out = net(**call)
    out.loss.backward()
    return out


@pytest.mark.parametrize("build", [llama, gpt2, gemma2, cohere],
                         ids=["llama", "gpt2-tied", "gemma2-softcap", "cohere-scale"])
def test_trains_as_the_plain_model_without_its_logits(build: Callable[[], nn.Module]) -> None:
    model = build()
    ref = copy.deepcopy(model)
    ids = _ids()
    labels = ids.clone()
    labels[0, :5] = -100  # ignored positions (a prompt), as transformers' collators mark them
    call = {"input_ids": ids, "labels": labels}
    chain = extract(model, (), call)
    assert chain.logits_dropped
    assert "linear_cross_entropy" in chain.stages[-1].gm.code
    net = chainplan.Checkpointed(model, budget="min", **FAST)
    got, want = _step(net, **call), _step(ref, **call)
    assert type(got) is type(want) and got.logits is None and want.logits is not None
    torch.testing.assert_close(got.loss, want.loss, rtol=LOSS_RTOL, atol=0)
    close_grads(model, ref)
    # Asked for, the logits come back, and with them PyTorch's head: the plain step.
    model.zero_grad()
    ref.zero_grad()
    kept = chainplan.Checkpointed(model, budget="min", keep_logits=True, **FAST)
    got, want = _step(kept, **call), _step(ref, **call)
    assert torch.equal(got.logits, want.logits) and torch.equal(got.loss, want.loss)


def test_the_model_loss_options_are_respected() -> None:
    """transformers' loss options, as a training loop passes them: ``num_items_in_batch``
    (the loss summed and divided by it, as ``Trainer`` does with gradient accumulation) and
    ``shift_labels`` given instead of shifting ``labels``."""
    model = llama()
    ref = copy.deepcopy(model)
    ids = _ids()
    labels = ids.clone()
    labels[1, -6:] = -100
    shifted = torch.cat([labels[:, 1:], torch.full((2, 1), -100)], dim=1)
    for extra in ({"num_items_in_batch": torch.tensor(40)}, {"shift_labels": shifted}):
        call = {"input_ids": ids, "labels": labels, **extra}
        net = chainplan.Checkpointed(model, budget="min", **FAST)
        got, want = _step(net, **call), _step(ref, **call)
        assert got.logits is None
        torch.testing.assert_close(got.loss, want.loss, rtol=LOSS_RTOL, atol=0)
        close_grads(model, ref)
        model.zero_grad()
        ref.zero_grad()


def _smoothed(logits: torch.Tensor, labels: torch.Tensor, vocab_size: int,
              **_: Any) -> torch.Tensor:
    """A model's own loss with label smoothing, which the fused head does not compute."""
    shifted = F.pad(labels, (0, 1), value=-100)[:, 1:]
    return F.cross_entropy(logits.float().view(-1, vocab_size), shifted.reshape(-1),
                           label_smoothing=0.1)


def test_a_loss_the_fused_head_does_not_compute_is_refused_naming_it() -> None:
    model = llama()
    model.loss_function = _smoothed
    ids = _ids()
    net = chainplan.Checkpointed(model, budget="min", **FAST)
    with pytest.raises(CaptureError, match=r"LlamaForCausalLM computes its loss from its "
                       r"logits with label smoothing \(label_smoothing=0.1\).*keep_logits=True"):
        net(input_ids=ids, labels=ids)
    ref = copy.deepcopy(model)
    kept = chainplan.Checkpointed(model, budget="min", keep_logits=True, **FAST)
    got, want = _step(kept, input_ids=ids, labels=ids), _step(ref, input_ids=ids, labels=ids)
    assert torch.equal(got.loss, want.loss) and torch.equal(got.logits, want.logits)


def test_plans_run_the_model_as_its_profile_captured_it() -> None:
    """A plan of a profile taken with the logits kept runs with them, from the Profile, a
    stored run id or the profile file (Go's answer says so: planning stays one crossing);
    a stored profile is reused only for a call captured the same way."""
    model, ids = llama(), _ids()
    call = {"input_ids": ids, "labels": ids}
    opts = {**FAST, "progress": False, "spread_warning": None}
    fused = chainplan.profile(model, **call, **opts)
    kept = chainplan.profile(model, **call, keep_logits=True, **opts)
    assert not kept.reused and kept.run_id != fused.run_id
    assert chainplan.profile(model, **call, keep_logits=True, **opts).run_id == kept.run_id
    for prof, keep in ((fused, False), (kept, True)):
        for source in (prof, prof.run_id, prof.path):
            p = chainplan.plan(source, budget="min")  # type: ignore[arg-type]
            assert p.keep_logits == keep  # Go reads it from the run, the file or the Profile
            out = p.wrap(model)(**call)
            assert (out.logits is None) != keep


def _smallest_within(prof: chainplan.Profile, slowdown: float) -> chainplan.Plan:
    """The plan of the smallest budget whose predicted step is within ``slowdown`` of the
    plain one (the profile's times: no timing is asserted)."""
    front = chainplan.tradeoff.frontier(prof)
    point = next(p for p in front.points if p.makespan <= slowdown * front.sum_time)
    return chainplan.plan(prof, budget=point.budget_bytes, algo="rotor", slots=point.slots)


def test_the_fused_head_saves_a_logits_tensor_in_the_smallest_plan_within_the_time() -> None:
    """The smallest plan within 1.25x the plain step's (predicted) time, measured with
    chainplan's allocator probes: with the head fused, at least one logits tensor under the
    same plan of the model with PyTorch's head (which holds the logits, their
    log-probabilities and their gradient), and within its budget."""
    vocab, batch, seq = 8192, 4, 32
    model, ids = llama(vocab), _ids(vocab, batch, seq)
    call = {"input_ids": ids, "labels": ids}
    opts = {**FAST, "progress": False, "spread_warning": None, "ingest": False}
    peaks = {}
    for keep in (False, True):
        prof = chainplan.profile(model, **call, keep_logits=keep, **opts)
        p = _smallest_within(prof, 1.25)
        model.zero_grad(set_to_none=True)
        got = chainplan.measure(p.wrap(model), **call, steps=1, store=False).peak_bytes
        assert got <= 1.02 * p.budget_bytes, (keep, got, p.budget_bytes)
        peaks[keep] = got
    logits = batch * seq * vocab * 4
    assert peaks[False] + logits <= peaks[True], peaks
