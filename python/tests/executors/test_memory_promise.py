"""The memory promise, measured on the running model: every plan's measured activation peak
stays within its budget, store-all measures what the plain model measures, and the smallest
plan goes where PyTorch's own checkpointing goes.

Regressions (issue 9): the executor kept δ_L, the gradient of the chain output, for the
whole backward and the chain model counted a_L until B_L although the loss frees it; on a
GPT with a large vocabulary head store-all then measured one logits tensor above the plain
model, and the smallest plan 40 % above its budget.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import chainplan
from tests.models import CheckpointSequential, gpt_like

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class SigmoidHead(nn.Module):
    """A head whose backward keeps its own output (sigmoid saves its result)."""

    def __init__(self, width: int, out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.fc(x)).flatten(0, 1)


def measured(net: nn.Module, x: torch.Tensor, loss_fn: LossFn, y: torch.Tensor) -> int:
    """The measured activation peak of one training step (chainplan.measure's definition)."""
    return chainplan.measure(net, x, loss_fn=loss_fn, target=y, steps=1, store=False).peak_bytes


def case(kind: str) -> tuple[nn.Sequential, torch.Tensor, torch.Tensor, LossFn]:
    """The GPT chain with three ends: cross-entropy (the loss consumes a_L), a mean squared
    error (the loss keeps a_L) and a sigmoid head (the last stage keeps a_L)."""
    model, x, y = gpt_like()
    if kind == "cross-entropy":
        return model, x, y, nn.CrossEntropyLoss()
    if kind == "mse":
        target = torch.randn(x.numel(), 1024)
        return model, x, target, nn.MSELoss()
    model[-1] = SigmoidHead(32, 256)
    return model, x, torch.rand(x.numel(), 256), nn.BCELoss()


@pytest.mark.parametrize("kind", ["cross-entropy", "mse", "sigmoid-head"])
def test_plans_hold_their_budgets(kind: str) -> None:
    model, x, y, loss_fn = case(kind)
    plain = measured(model, x, loss_fn, y)
    model.zero_grad(set_to_none=True)
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=1, warmup=1,
                             progress=False)

    store_all = chainplan.plan(prof, budget="min", algo="store-all")
    got = measured(store_all.wrap(model), x, loss_fn, y)
    assert abs(got - plain) <= 0.02 * plain, (got, plain)
    # The model may over-estimate (a loss's buffers held to the end of the step are counted
    # from the first stage on), never under-estimate.
    assert 0.98 * got <= store_all.peak_bytes <= 1.1 * got, (store_all.peak_bytes, got)

    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = store_all.budget_bytes
    for budget in (lo, lo + (hi - lo) // 4, (lo + hi) // 2, hi):
        p = chainplan.plan(prof, budget=budget)
        model.zero_grad(set_to_none=True)
        got = measured(p.wrap(model), x, loss_fn, y)
        assert got <= 1.05 * budget, (kind, budget, got, p.peak_bytes)
        # The prediction is close to the measurement, not a loose bound.
        assert got >= 0.85 * p.peak_bytes, (kind, budget, got, p.peak_bytes)


def test_smallest_plan_goes_where_checkpoint_sequential_goes() -> None:
    """chainplan's smallest plan runs in no more memory than the best checkpoint_sequential,
    and its sequential baseline in no more than checkpoint_sequential with the same
    segments."""
    model, x, y, loss_fn = case("cross-entropy")
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=1, warmup=1,
                             progress=False)
    segments = range(1, len(model) + 1)
    torch_peaks = {k: measured(CheckpointSequential(model, k), x, loss_fn, y) for k in segments}
    smallest = chainplan.plan(prof, budget="min")
    assert measured(smallest.wrap(model), x, loss_fn, y) <= min(torch_peaks.values())
    for k in segments:
        p = chainplan.plan(prof, budget="1GiB", algo="sequential", segments=k)
        assert measured(p.wrap(model), x, loss_fn, y) <= 1.01 * torch_peaks[k], k



class ConvBlock(nn.Module):
    """Convolution, BatchNorm and ReLU as one stage: ReLU saves its output, which autograd
    frees during the stage's backward."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def test_smallest_plan_goes_where_checkpoint_sequential_goes_on_a_cnn() -> None:
    """Regression: B_k ran from a_k itself, holding it through the whole backward step, and
    the profiler measured o_B the same way, so on a CNN of conv blocks the smallest plan
    measured one full-resolution activation above checkpoint_sequential's best (56.8 against
    48.8 MiB at 64x64, batch 16)."""
    torch.manual_seed(0)
    model = nn.Sequential(ConvBlock(3, 8), ConvBlock(8, 8), nn.MaxPool2d(2),
                          ConvBlock(8, 16), ConvBlock(16, 16), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 8 * 8, 10))
    x, y, loss_fn = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,)), nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=1, warmup=1,
                             progress=False)
    best = min(measured(CheckpointSequential(model, k), x, loss_fn, y)
               for k in range(1, len(model) + 1))
    smallest = chainplan.plan(prof, budget="min")
    got = measured(smallest.wrap(model), x, loss_fn, y)
    assert got <= best, (got, best)
    assert got <= 1.05 * smallest.budget_bytes, (got, smallest.budget_bytes)



class LossAndLogits(nn.Module):
    """A language model that returns its loss next to its logits, as a HuggingFace
    ``*ForCausalLM`` given ``labels=`` does: residual MLP blocks and a vocabulary head whose
    logits are most of a step's memory. ``end="cross-entropy"``: the loss consumes the
    logits; ``end="sigmoid"``: the head saves its output (a sigmoid) for its backward, whose
    peak, the head's weight gradient, comes after autograd is done with that output."""

    def __init__(self, end: str, width: int, vocab: int, blocks: int = 3) -> None:
        super().__init__()
        self.end = end
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
            for _ in range(blocks))
        self.head = nn.Linear(width, vocab)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        for block in self.blocks:
            x = x + block(x)
        if self.end == "sigmoid":
            probs = torch.sigmoid(self.head(x))
            return {"loss": nn.functional.binary_cross_entropy(probs, labels), "logits": probs}
        logits = self.head(x)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return {"loss": loss, "logits": logits}


@pytest.mark.parametrize(("end", "width", "batch", "vocab"), [
    ("cross-entropy", 64, (4, 32), 8000),
    ("sigmoid", 64, (4, 32), 8000),  # the head's backward peaks while it holds a_L
    ("sigmoid", 256, (2, 8), 4000),  # ... after it releases a_L: its weight gradient
])
def test_a_model_returning_its_loss_and_logits_keeps_its_promise(
        end: str, width: int, batch: tuple[int, int], vocab: int) -> None:
    """Regression (issue 19, a user trial on LlamaForCausalLM with labels=): the output
    object holds the logits through loss.backward(), but the loss backward's overhead was
    measured with them present and the chain model had them nowhere from the loss forward
    on: store-all predicted 47.1 MiB and measured 62.7 (one logits tensor, 15.6 MiB,
    missing) on a vocabulary of 16000, and every plan broke its budget. Where the head
    saves its output, the logits were counted twice in its backward instead (19 % over on
    that vocabulary); not counted there, a head measured with its output released was 5 %
    under where its backward peaks after the release."""
    torch.manual_seed(0)
    model = LossAndLogits(end, width, vocab)
    x = torch.randn(*batch, width)
    y = torch.randint(0, vocab, batch) if end == "cross-entropy" else torch.rand(*batch, vocab)
    logits_bytes = x.shape[0] * x.shape[1] * vocab * 4
    # The logits kept (a cross-entropy head would otherwise be fused with its loss).
    prof = chainplan.profile(model, x, labels=y, repeats=1, warmup=1, progress=False,
                             spread_warning=None, reuse=False, keep_logits=True)
    plain = chainplan.measure(model, x, labels=y, steps=1, store=False).peak_bytes
    assert plain > 2 * logits_bytes  # the logits are most of a step
    for p in (chainplan.plan(prof, budget="min", algo="store-all"),
              chainplan.plan(prof, budget="min")):
        model.zero_grad(set_to_none=True)
        got = chainplan.measure(p.wrap(model), x, labels=y, steps=1, store=False).peak_bytes
        assert got <= 1.02 * p.budget_bytes, (p.algo, got, p.budget_bytes)
        # Within 5 % of the measurement, and never under it by more than 2 %.
        assert 0.98 * got <= p.peak_bytes <= 1.05 * got, (p.algo, p.peak_bytes, got)
