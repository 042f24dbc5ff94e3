"""The output projection fused with its cross-entropy (chainplan.runtime.linearloss,
chainplan.graph.fuseloss): the same loss and gradients as PyTorch's head and loss, without
ever holding the logits, fused at capture only where the function is the same, and what
the plan of a model with its loss inside predicts and measures."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import chainplan
from chainplan.graph.capture import CaptureError
from chainplan.graph.chain import extract
from chainplan.profiler.memory import MemoryProbe
from chainplan.runtime.linearloss import chunk_rows, linear_cross_entropy
from tests.graph.models import make_gpt
from tests.profiler.helpers import DEVICES


def _grads(loss: torch.Tensor, leaves: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    return torch.autograd.grad(loss * 1.7, leaves)  # a scaled upstream gradient too


@pytest.mark.parametrize("seed", range(40))
def test_equals_pytorch_on_random_heads(seed: int) -> None:
    rng = random.Random(seed)
    torch.manual_seed(seed)
    lead = [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]
    width, vocab = rng.randint(1, 20), rng.randint(2, 60)
    h = torch.randn(*lead, width, dtype=torch.float64, requires_grad=True)
    w = torch.randn(vocab, width, dtype=torch.float64, requires_grad=True)
    b = torch.randn(vocab, dtype=torch.float64, requires_grad=True) if seed % 2 else None
    n = h.numel() // width
    t = torch.randint(0, vocab, (n,))
    ignore = rng.choice([-100, 0, 3])
    t[torch.rand(n) < 0.3] = ignore  # some rows, possibly all, add nothing
    reduction = rng.choice(["mean", "sum"])
    scale = rng.choice([None, None, 0.25, -3.0])  # Cohere's logit_scale, or none
    cap = rng.choice([None, None, 0.5, 30.0])  # Gemma 2's logit soft-capping, or none
    leaves = [x for x in (h, w, b) if x is not None]
    z = F.linear(h, w, b)
    z = z if scale is None else z * scale
    z = z if cap is None else cap * torch.tanh(z / cap)
    ref = F.cross_entropy(z.reshape(n, vocab), t, reduction=reduction, ignore_index=ignore)
    out = linear_cross_entropy(h, w, b, t, reduction=reduction, ignore_index=ignore,
                               rows=rng.randint(1, n + 2), scale=scale, softcap=cap)
    if torch.isnan(ref):  # every row ignored, reduced by mean: 0 / 0 as in PyTorch
        assert torch.isnan(out)
        return
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    for got, want in zip(_grads(out, leaves), _grads(ref, leaves), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)
    with torch.no_grad():  # no gradient wanted: the loss alone
        torch.testing.assert_close(
            linear_cross_entropy(h, w, b, t, reduction=reduction, ignore_index=ignore,
                                 scale=scale, softcap=cap),
            ref.detach(), rtol=1e-10, atol=1e-10)


def test_gradients_of_a_frozen_head_and_a_tied_weight() -> None:
    torch.manual_seed(0)
    emb = nn.Embedding(30, 8)
    ids = torch.randint(0, 30, (4, 5))
    t = torch.randint(0, 30, (20,))
    h = emb(ids)  # the head tied to the embedding: two gradients summed
    ref = torch.autograd.grad(F.cross_entropy(F.linear(h, emb.weight).flatten(0, 1), t),
                              emb.weight)[0]
    h = emb(ids)
    got = torch.autograd.grad(linear_cross_entropy(h, emb.weight, None, t, rows=3),
                              emb.weight)[0]
    torch.testing.assert_close(got, ref)
    frozen = emb.weight.detach()
    x = torch.randn(4, 5, 8, requires_grad=True)
    ref_x = torch.autograd.grad(F.cross_entropy(F.linear(x, frozen).flatten(0, 1), t), x)[0]
    torch.testing.assert_close(torch.autograd.grad(
        linear_cross_entropy(x, frozen, None, t, rows=7), x)[0], ref_x)


def test_chunks_are_sized_like_the_hidden_states() -> None:
    # A GPT at sequence 512, batch 8, width 768 and 32768 words: 8 chunks of 512 rows,
    # 64 MiB of float32 logits each, not the 512 MiB whole.
    assert chunk_rows(4096, 768, 32768, 4) == 512
    assert chunk_rows(10, 4, 1000, 4) == 10  # never more rows than there are
    assert chunk_rows(512, 128, 8192, 4) == 128  # at least 4 MiB of logits a chunk
    assert chunk_rows(1 << 16, 4096, 1000, 2) == 1 << 16  # logits as small as h: one chunk


class _Head(nn.Module):
    """A model ending in a linear head (a language model's: 11 words, 6 hidden units), its
    loss computed in ``forward`` as configured, its logits returned beside it when
    ``returns``."""

    def __init__(self, how: str, returns: bool = False) -> None:
        super().__init__()
        self.how, self.returns = how, returns
        self.body = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6))
        self.head = nn.Linear(6, 11)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> Any:
        logits = self.head(self.body(x))
        out = self._loss(logits, labels)
        if self.returns:
            out["logits"] = logits
        return out

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> Any:
        flat = logits.view(-1, logits.shape[-1])
        if self.how == "plain":
            return {"loss": F.cross_entropy(flat, labels.view(-1))}
        if self.how == "upcast":  # HuggingFace's loss: logits.float(), then a view
            return {"loss": F.cross_entropy(logits.float().reshape(flat.shape), labels.view(-1),
                                            reduction="sum", ignore_index=-1)}
        if self.how == "smoothing":
            return {"loss": F.cross_entropy(flat, labels.view(-1), label_smoothing=0.1)}
        if self.how == "class-weight":
            return {"loss": F.cross_entropy(flat, labels.view(-1), weight=torch.ones(11))}
        if self.how == "unreduced":
            return {"loss": F.cross_entropy(flat, labels.view(-1), reduction="none").mean()}
        if self.how == "logits-returned":  # the logits have another reader, dropped
            return {"loss": F.cross_entropy(flat, labels.view(-1)), "logits": logits}
        if self.how == "logits-read":  # ... and another, which is not
            loss = F.cross_entropy(flat, labels.view(-1))
            return {"loss": loss + logits.square().mean(), "logits": logits}
        if self.how == "class-dim":  # (B, V, T) logits: rows are not the leading dims
            return {"loss": F.cross_entropy(logits.transpose(1, 2), labels)}
        raise AssertionError(self.how)


FUSED = {"plain": True, "upcast": True, "smoothing": False, "class-weight": False,
         "unreduced": False, "logits-returned": True, "class-dim": False}


@pytest.mark.parametrize(("how", "keep"), [*((h, False) for h in sorted(FUSED)),
                                           ("logits-returned", True)])
def test_fused_at_capture_only_where_the_function_is_the_same(how: str, keep: bool) -> None:
    torch.manual_seed(0)
    model = _Head(how)
    x, y = torch.randn(3, 4, 6), torch.randint(0, 11, (3, 4))
    chain = extract(model, (x,), {"labels": y}, keep_logits=keep)
    epilogue = chain.outputs.epilogue
    code = "".join(s.gm.code for s in [*chain.stages, *([epilogue] if epilogue else [])])
    fused = FUSED[how] and not keep  # logits kept: they have another reader
    assert ("linear_cross_entropy" in code) == fused, code
    assert ("cross_entropy_loss" in code) != fused, code
    # Whichever way it runs, a plan's step gives the plain step's loss and gradients.
    ref = model(x, labels=y)["loss"]
    grads = torch.autograd.grad(ref, list(model.parameters()))
    prof = chainplan.profile(model, x, labels=y, repeats=1, warmup=1, progress=False,
                             spread_warning=None, keep_logits=keep)
    net = chainplan.plan(prof, budget="min").wrap(model)
    out = net(x, labels=y)
    loss = out["loss"]
    if how == "logits-returned":  # returned as asked, else None in their place
        assert (out["logits"] is None) == (not keep)
        if keep:
            torch.testing.assert_close(out["logits"], model(x, labels=y)["logits"])
    torch.testing.assert_close(loss, ref)
    for got, want in zip(torch.autograd.grad(loss, list(model.parameters())), grads,
                         strict=True):
        torch.testing.assert_close(got, want)


REFUSED = {"smoothing": r"label smoothing \(label_smoothing=0.1\)",
           "class-weight": r"a class weight \(cross_entropy's weight=\)",
           "unreduced": r"reduction='none'",
           "class-dim": "one row of logits and one class index per token",
           "logits-read": r"the logits \(\w+\) read besides the loss, by aten.\w+"}


@pytest.mark.parametrize("how", sorted(REFUSED))
def test_a_language_model_loss_that_needs_its_logits_is_refused_unless_kept(how: str) -> None:
    """A language-model head whose logits are returned and whose loss the fused head does
    not compute: refused, naming the option and the remedy; kept, the plain step."""
    torch.manual_seed(0)
    model = _Head(how, returns=True)
    x, y = torch.randn(3, 4, 6), torch.randint(0, 11, (3, 4))
    with pytest.raises(CaptureError, match=REFUSED[how]) as err:
        chainplan.profile(model, x, labels=y, repeats=1, warmup=0, progress=False,
                          spread_warning=None, ingest=False)
    assert "_Head computes its loss" in str(err.value) and "keep_logits=True" in str(err.value)
    prof = chainplan.profile(model, x, labels=y, repeats=1, warmup=0, progress=False,
                             spread_warning=None, ingest=False, keep_logits=True)
    out = chainplan.plan(prof, budget="min").wrap(model)(x, labels=y)
    want = model(x, labels=y)
    torch.testing.assert_close(out["loss"], want["loss"])
    torch.testing.assert_close(out["logits"], want["logits"])


def test_a_classifier_keeps_its_logits() -> None:
    """Logits of a row per example, or narrower than the hidden state, are a classifier's:
    returned, and the head is not fused (they are small)."""
    torch.manual_seed(0)
    for x, y, head in ((torch.randn(5, 6), torch.randint(0, 11, (5,)), nn.Linear(6, 11)),
                       (torch.randn(3, 4, 6), torch.randint(0, 3, (3, 4)), nn.Linear(6, 3))):
        model = _Head("plain", returns=True)
        model.head = head
        chain = extract(model, (x,), {"labels": y})
        assert not chain.logits_dropped
        prof = chainplan.profile(model, x, labels=y, repeats=1, warmup=0, progress=False,
                                 spread_warning=None, ingest=False)
        out = chainplan.plan(prof, budget="min").wrap(model)(x, labels=y)
        torch.testing.assert_close(out["logits"], model(x, labels=y)["logits"])


def _measured(net: nn.Module, case: Any, **call: Any) -> int:
    return chainplan.measure(net, *case.args, steps=1, store=False, **call,
                             **case.kwargs).peak_bytes


def test_the_loss_inside_lowers_the_smallest_plan_and_keeps_the_promise() -> None:
    """A GPT whose head holds most of the step's memory (an 8192-word head at width 32): its
    smallest plan with the loss inside measures well under the smallest with the loss
    outside, within the budget and close to the prediction, with the plain gradients."""
    torch.manual_seed(0)
    case = make_gpt(batch=8, seq=32)
    case.model.head = nn.Linear(32, 8192, bias=False)  # untied, larger than the blocks
    case.target = torch.randint(0, 8192, (8 * 32,))
    for m in case.model.modules():  # no dropout: the plan's step and the plain one compare
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    net = chainplan.WithLoss(case.model, F.cross_entropy)
    opts = {"repeats": 1, "warmup": 1, "progress": False, "spread_warning": None}
    inside = chainplan.plan(chainplan.profile(net, *case.args, labels=case.target, **opts,
                                              **case.kwargs), budget="min")
    outside = chainplan.plan(chainplan.profile(case.model, *case.args, loss_fn=F.cross_entropy,
                                               target=case.target, **opts, **case.kwargs),
                             budget="min")
    run = inside.wrap(net)
    got = _measured(run, case, labels=case.target)
    got_outside = _measured(outside.wrap(case.model), case, loss_fn=F.cross_entropy,
                            target=case.target)
    logits = 8 * 32 * 8192 * 4  # two chunks of the fused head
    assert got <= 1.02 * inside.budget_bytes, (got, inside.budget_bytes)
    assert abs(got - inside.peak_bytes) <= 0.05 * inside.peak_bytes, (got, inside.peak_bytes)
    # Outside, the loss holds three logits at its backward (logits, log-probabilities, their
    # gradient); inside, one or two chunks of them.
    assert got + 1.5 * logits <= got_outside, (got, got_outside)
    ref = F.cross_entropy(case.model(*case.args, **case.kwargs), case.target)
    params = list(case.model.parameters())
    want = torch.autograd.grad(ref, params)
    loss = run(*case.args, labels=case.target, **case.kwargs)["loss"]
    torch.testing.assert_close(loss, ref)
    for g, w in zip(torch.autograd.grad(loss, params), want, strict=True):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("device", DEVICES)
def test_fused_head_memory_and_gradients_under_autocast(device: str) -> None:
    """The fused head under bf16 autocast (products in bf16, softmax in float32, as
    PyTorch runs a head and its loss there): the plain gradients within bf16 rounding, and
    a measured peak at least two logits under the plain head and loss's."""
    torch.manual_seed(0)
    n, width, vocab = 1024, 64, 8192  # float32 logits of 32 MiB: 8 chunks of 4 MiB
    h = torch.randn(n, width, device=device, requires_grad=True)
    w = (torch.randn(vocab, width, device=device) / 8).requires_grad_()
    t = torch.randint(0, vocab, (n,), device=device)

    def step(fused: bool) -> tuple[int, list[torch.Tensor]]:
        h.grad = w.grad = None
        with MemoryProbe(device=torch.device(device)) as probe:
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = (linear_cross_entropy(h, w, None, t) if fused else
                        F.cross_entropy(F.linear(h, w), t))
            loss.backward()
            del loss
        assert h.grad is not None and w.grad is not None
        return probe.peak_bytes, [h.grad.clone(), w.grad.clone()]

    step(False), step(True)  # warm-up: allocator caches, autocast's weight cast
    plain_peak, want = step(False)
    fused_peak, got = step(True)
    for g, r in zip(got, want, strict=True):
        torch.testing.assert_close(g, r, rtol=0.02, atol=2e-3 * float(r.abs().max()))
    logits = n * vocab * 4
    assert fused_peak + 2 * logits <= plain_peak, (fused_peak, plain_peak)
