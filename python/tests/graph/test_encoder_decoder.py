"""Issue 35, item 3: encoder-decoders as their users call them,
``model(input_ids=..., attention_mask=..., labels=...)``, train through ``Checkpointed``
unchanged. Before, the capture took ``input_ids`` as the chain input, and the output's
``encoder_last_hidden_state`` was refused as "values computed from its input at different
depths" (CaptureError); now the decoder is the chain, the encoder runs once per step
before it and its output is a side value every decoder stage reads
(:mod:`chainplan.graph.call`, docs/executors.md, "Encoder-decoders").

Tolerances (fp32): with PyTorch's head kept (``keep_logits=True``) the loss and every
gradient are the plain model's bit for bit; with the head fused (the default) they are
within the fused head's rounding (test_causal_lm_head.py: loss 1e-6 relative, gradients
1e-5 of the largest entry)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan.graph.chain import extract
from tests.graph.seq2seq import FAMILIES, call

FAST: dict[str, Any] = {"repeats": 1, "warmup": 0}
OPTS: dict[str, Any] = {**FAST, "progress": False, "spread_warning": None, "ingest": False}
LOSS_RTOL, GRAD_TOL = 1e-6, 1e-5


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


def _middle(prof: chainplan.Profile) -> int:
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    return (lo + hi) // 2


#: Exceptions to bit-identity with PyTorch's head kept, as a share of the largest gradient
#: entry. T5: its loss is the plain model's bit for bit, and the gradients from the second
#: decoder block's self-attention down differ by up to 4e-7 of the largest entry (5e-8
#: absolute), where BART, Pegasus and Marian are exact; not located yet (the gradients
#: reaching a stage's input are summed in another order somewhere: T5's RMS norm reads its
#: input twice beside the residual).
NOT_BITWISE = {"t5": 1e-6}


def _compare(got: Any, want: Any, grads: dict[str, torch.Tensor],
             expect: dict[str, torch.Tensor], tolerance: float) -> None:
    assert type(got) is type(want)
    assert grads.keys() == expect.keys()
    assert torch.equal(got.encoder_last_hidden_state, want.encoder_last_hidden_state)
    if not tolerance:
        assert torch.equal(got.loss, want.loss)
        for k, g in grads.items():
            assert torch.equal(g, expect[k]), (k, (g - expect[k]).abs().max())
        return
    torch.testing.assert_close(got.loss, want.loss, rtol=LOSS_RTOL, atol=0)
    scale = max(g.abs().max() for g in expect.values())
    for k, g in grads.items():
        torch.testing.assert_close(g, expect[k], rtol=0, atol=tolerance * scale)


def _plain(model: nn.Module, kwargs: dict[str, Any]) -> tuple[Any, dict[str, torch.Tensor]]:
    ref = copy.deepcopy(model)
    want = ref(**kwargs)
    want.loss.backward()
    return want, _grads(ref)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_checkpointed_trains_as_the_plain_model(name: str) -> None:
    """PyTorch's head kept, at the smallest budget and a middle one: the plain model's loss,
    logits and gradients, and the encoder's output as the step computed it."""
    model = FAMILIES[name]().train()
    kwargs = call()
    want, expect = _plain(model, kwargs)
    prof = chainplan.profile(model, **kwargs, keep_logits=True, **OPTS)
    for budget in ("min", _middle(prof)):
        net = chainplan.Checkpointed(model, budget=budget, keep_logits=True, **FAST)
        got = net(**kwargs)
        got.loss.backward()
        assert torch.equal(got.logits, want.logits)
        _compare(got, want, _grads(model), expect, NOT_BITWISE.get(name, 0.0))
        model.zero_grad(set_to_none=True)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_fused_head_gradients_and_plans_measure_what_they_predict(name: str) -> None:
    """The head fused with its loss (the default; the logits are None): the plain model's
    loss and gradients within the fused head's rounding, and every plan's measured peak
    within its budget (+2 %) and within 5 % of its prediction, the encoder and its output
    counted once as side values."""
    model = FAMILIES[name](vocab=4096).train()
    kwargs = call(vocab=4096)
    want, expect = _plain(model, kwargs)
    prof = chainplan.profile(model, **kwargs, **OPTS)
    plans = [chainplan.plan(prof, budget="min"), chainplan.plan(prof, budget=_middle(prof)),
             chainplan.plan(prof, budget="min", algo="store-all")]
    for p in plans:
        model.zero_grad(set_to_none=True)
        net = p.wrap(model)
        got = net(**kwargs)
        got.loss.backward()
        assert got.logits is None
        _compare(got, want, _grads(model), expect, GRAD_TOL)
        model.zero_grad(set_to_none=True)
        peak = chainplan.measure(net, **kwargs, steps=1, store=False).peak_bytes
        assert peak <= 1.02 * p.budget_bytes, (p.algo, peak, p.budget_bytes)
        assert 0.95 * peak <= p.peak_bytes <= 1.05 * peak, (p.algo, p.peak_bytes, peak)


def test_the_decoder_is_the_chain() -> None:
    """The chain input is the decoder's (the labels shifted right, as forward makes it),
    the stages are the decoder's and the head, and the encoder's output is a side value."""
    model = FAMILIES["bart"]().train()
    chain = extract(model, (), call())
    assert all("decoder" in n or n.startswith("lm_head") for n in chain.names), chain.names
    assert chain.logits_dropped
    encoder_out = [s for s in chain.split.side if s.shape == (2, 24, 64)]
    assert encoder_out and encoder_out[0].origin == "computed"


def test_a_family_not_named_by_class() -> None:
    """mBART (its own shift of the labels, no decoder start token), built from its config by
    AutoModelForSeq2SeqLM: the plain model's loss and gradients through the fused head."""
    from transformers import AutoModelForSeq2SeqLM, MBartConfig

    cfg = MBartConfig(vocab_size=512, d_model=64, encoder_layers=2, decoder_layers=2,
                      encoder_attention_heads=4, decoder_attention_heads=4,
                      encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
                      pad_token_id=1, dropout=0.0)
    model = AutoModelForSeq2SeqLM.from_config(cfg).train()
    ref = copy.deepcopy(model)
    kwargs = call()
    kwargs["labels"][:, -1] = 2  # mBART's shift wraps the last non-pad token around
    want = ref(**kwargs)
    want.loss.backward()
    got = chainplan.Checkpointed(model, budget="min", **FAST)(**kwargs)
    got.loss.backward()
    torch.testing.assert_close(got.loss, want.loss, rtol=LOSS_RTOL, atol=0)
    expect = _grads(ref)
    scale = max(g.abs().max() for g in expect.values())
    for k, g in _grads(model).items():
        torch.testing.assert_close(g, expect[k], rtol=0, atol=GRAD_TOL * scale)


def test_an_encoder_decoder_that_cannot_be_captured_is_refused() -> None:
    """M2M100 makes its decoder input from the labels with its module's
    ``shift_tokens_right``, which chainplan calls as its forward does; its training skips
    layers at random (``layerdrop``), a branch on a tensor's value: refused with the
    construct and the model's line, whether the decoder input is given or made."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration
    from transformers.models.m2m_100.modeling_m2m_100 import shift_tokens_right

    from chainplan.graph.capture import CaptureError

    cfg = M2M100Config(vocab_size=512, d_model=64, encoder_layers=2, decoder_layers=2,
                       encoder_attention_heads=4, decoder_attention_heads=4,
                       encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
                       encoder_layerdrop=0.1, decoder_layerdrop=0.1, dropout=0.0)
    model = M2M100ForConditionalGeneration(cfg).train()
    kwargs = call()
    with pytest.raises(CaptureError, match=r"data-dependent control flow.*layerdrop"):
        extract(model, (), kwargs)
    kwargs["decoder_input_ids"] = shift_tokens_right(kwargs["labels"], cfg.pad_token_id,
                                                     cfg.decoder_start_token_id)
    with pytest.raises(CaptureError, match=r"data-dependent control flow.*layerdrop"):
        extract(model, (), kwargs)


def test_a_model_shifting_its_labels_with_its_modules_function_trains_as_called() -> None:
    """BlenderbotSmall has no ``prepare_decoder_input_ids_from_labels``: its forward calls
    its module's ``shift_tokens_right(labels, pad, start)``, and chainplan makes the same
    call (it was refused, asking for ``decoder_input_ids=``). Trained as called, with the
    plain model's loss and gradients."""
    from transformers import BlenderbotSmallConfig, BlenderbotSmallForConditionalGeneration

    cfg = BlenderbotSmallConfig(vocab_size=512, d_model=64, encoder_layers=2,
                                decoder_layers=2, encoder_attention_heads=4,
                                decoder_attention_heads=4, encoder_ffn_dim=128,
                                decoder_ffn_dim=128, max_position_embeddings=64, dropout=0.0)
    torch.manual_seed(0)
    model = BlenderbotSmallForConditionalGeneration(cfg)
    ref = copy.deepcopy(model)
    kwargs = call()
    net = chainplan.Checkpointed(model, budget="min", keep_logits=True, **FAST)
    out = net(**kwargs)
    out.loss.backward()
    want = ref(**kwargs)
    want.loss.backward()
    torch.testing.assert_close(out.loss, want.loss, rtol=0, atol=1e-6)
    for (name, a), b in zip(model.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=1e-6, msg=name)
