"""Issue 36: a language model's head fused with its loss or not is an option of the last
stage, chosen per budget (:mod:`chainplan.graph.headform`).

The profile measures the last stage in its unfused form as a *form option*; ``rotor-ops``
runs it where its logits fit and it is faster, the fused head below; the executor runs the
chosen form. Whichever runs, the loss and the gradients are the plain model's (the fused
head's tolerances, tests/graph/test_causal_lm_head.py) and the measured peak is within the
plan's budget.

Which head is faster depends on the machine (on a GPU the fused head's chunks cost 2-3.5 %
of the step; on a loaded CPU either may win), so the test that asserts the choice sets the
unfused form's times below the fused head's in the profile: it checks what the planner and
the executor do with the measurement, not the machine's timing.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan.graph import headform
from chainplan.graph.chain import extract
from chainplan.graph.headform import UNFUSED_HEAD
from chainplan.schema import read_rows, write_profile
from tests.graph.test_causal_lm_head import LOSS_RTOL, close_grads

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

VOCAB, BATCH, SEQ = 4096, 4, 32
OPTS: dict[str, Any] = {"repeats": 1, "warmup": 0, "progress": False, "spread_warning": None,
                        "ingest": False}


def llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(
        num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
        num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64, bos_token_id=0,
        eos_token_id=0)).train()


def gpt2() -> nn.Module:
    """Tied embeddings: the head's weight is the token embedding's."""
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=VOCAB,
                                      n_positions=64, bos_token_id=0, eos_token_id=0,
                                      resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0)).train()


def _call() -> dict[str, torch.Tensor]:
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    labels = ids.clone()
    labels[0, :5] = -100
    return {"input_ids": ids, "labels": labels}


@pytest.fixture(autouse=True)
def _on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The profiles measure the unfused head on the CPU too (headform.DEVICES leaves the
    CPU out for the time it costs there, which is not what these tests check)."""
    monkeypatch.setattr(headform, "DEVICES", headform.DEVICES | {"cpu"})


def _form_option(options_json: str | None) -> dict[str, Any] | None:
    found = [o for o in json.loads(options_json or "[]") if o.get("form")]
    return found[0] if found else None


def _unfused_faster(prof: chainplan.Profile, path: Path) -> Path:
    """The profile with the unfused head's times set to a quarter of the fused head's
    (module docstring), written to ``path``."""
    rows, meta = read_rows(prof.path)
    out = []
    for r in rows:
        opts = json.loads(r.options_json or "[]")
        for o in opts:
            if o.get("form"):
                o["fwd_time"], o["bwd_time"] = r.fwd_time_s / 4, r.bwd_time_s / 4
        out.append(dataclasses.replace(r, options_json=json.dumps(opts) if opts else None))
    return write_profile(path, out, meta)


def test_the_profile_measures_the_unfused_head_as_an_option() -> None:
    """The last stage's form option keeps the logits (their log-probabilities, for the
    backward), which the fused head never holds (it keeps the gradients of the hidden
    states and the weight, computed in its forward); a model profiled with its logits kept
    has PyTorch's head only, and no form."""
    model, call = llama(), _call()
    prof = chainplan.profile(model, **call, **OPTS)
    last = [r for r in prof.rows if r.stage_kind == "stage"][-1]
    form = _form_option(last.options_json)
    assert form is not None and form["form"] == UNFUSED_HEAD
    logits = BATCH * SEQ * VOCAB * 4
    assert form["saved_bytes"] >= logits > last.saved_bytes, (form, last.saved_bytes)
    assert form["fwd_time"] > 0 and form["bwd_time"] > 0 and form["recompute_time"] == 0
    kept = chainplan.profile(model, **call, keep_logits=True, **OPTS)
    assert all(_form_option(r.options_json) is None for r in kept.rows)
    assert extract(model, (), call, keep_logits=True).stages[-1].forms == ()


def test_the_cpu_keeps_the_fused_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a device type headform.DEVICES leaves out, the profile has no form option."""
    monkeypatch.setattr(headform, "DEVICES", frozenset({"cuda"}))
    prof = chainplan.profile(llama(), **_call(), **OPTS)
    assert all(_form_option(r.options_json) is None for r in prof.rows)


@pytest.mark.parametrize("build", [llama, gpt2], ids=["llama", "gpt2-tied"])
def test_the_head_option_is_chosen_per_budget(build: Any, tmp_path: Path) -> None:
    """At the budget of the fastest plan the head runs unfused, at the smallest budget
    fused; both train as the plain model and stay within their budgets, measured."""
    model, call = build(), _call()
    prof = chainplan.profile(model, **call, **OPTS)
    path = _unfused_faster(prof, tmp_path / "unfused-faster.arrow")
    stages = len(prof.stage_names)
    fastest = chainplan.plan(path, budget=10**10)
    large = chainplan.plan(path, budget=fastest.peak_bytes)
    small = chainplan.plan(path, budget="min")
    assert large.forms == {stages: UNFUSED_HEAD}, (large.forms, str(large))
    assert small.forms == {}, (small.forms, str(small))
    assert small.budget_bytes < large.budget_bytes
    for p in (large, small):
        ref = copy.deepcopy(model)
        model.zero_grad(set_to_none=True)
        net = p.wrap(model)
        got, want = net(**call), ref(**call)
        got.loss.backward()
        want.loss.backward()
        assert got.logits is None
        torch.testing.assert_close(got.loss, want.loss, rtol=LOSS_RTOL, atol=0)
        close_grads(model, ref)
        model.zero_grad(set_to_none=True)
        peak = chainplan.measure(net, **call, steps=1, store=False).peak_bytes
        assert peak <= 1.02 * p.budget_bytes, (p.forms, peak, p.budget_bytes)
