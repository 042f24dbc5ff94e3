"""measure_stage and measure_loss: the recipe of specs/rotor.md §7 item 25."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.lossmeasure import measure_loss
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.stagemeasure import StageMeasurement, measure_stage
from tests.profiler.helpers import DEVICES

FLOAT = 4  # bytes per float32


def _fast(stage: nn.Module, x: torch.Tensor, device: str = "cpu") -> StageMeasurement:
    return measure_stage(stage, x, repeats=2, warmup=1, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_relu_stage(device: str) -> None:
    stage = nn.Sequential(nn.Linear(32, 16), nn.ReLU()).to(device)
    x = torch.randn(8, 32, device=device)
    m = _fast(stage, x, device)
    a = 8 * 16 * FLOAT
    assert m.out_bytes == a
    assert m.saved_bytes == a  # ReLU saves the output itself: ā = a
    assert m.input_grad_bytes == x.numel() * FLOAT
    assert m.param_bytes == (32 * 16 + 16) * FLOAT
    assert m.fwd_retained_bytes == a
    assert len(m.fwd_times_s) == len(m.bwd_times_s) == 2
    assert m.fwd_time_s > 0 and m.bwd_time_s > 0
    assert m.fwd_tmp_bytes >= 0 and m.bwd_tmp_bytes >= 0
    assert m.output.shape == (8, 16) and not m.output.requires_grad


class _ScaledShift(nn.Module):
    """out = (x + 1) * 2: one temporary (x + 1) that nothing saves."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 1) * 2


@pytest.mark.parametrize("device", DEVICES)
def test_temporaries_of_a_known_stage(device: str) -> None:
    x = torch.randn(64, 64, device=device)
    a = x.numel() * FLOAT
    m = _fast(_ScaledShift(), x, device)
    # Forward: the temporary x + 1 (a bytes) and the output (a bytes) coexist: peak 2a,
    # ā = a (nothing saved, the output kept), so o_F = a. On the CPU the Python scalars 1
    # and 2 also become 0-dim tensors of a few bytes each.
    assert (m.out_bytes, m.saved_bytes) == (a, a)
    assert a <= m.fwd_tmp_bytes <= a + 64
    # Backward: δ (a) and δ·2, which becomes x.grad (δ_in = a): peak 2a, so o_B = 0 (plus
    # the scalar 2 as a 0-dim tensor on the CPU).
    assert m.input_grad_bytes == a
    assert 0 <= m.bwd_tmp_bytes <= 64


def test_linear_stage_keeps_only_its_output() -> None:
    m = _fast(nn.Linear(32, 16), torch.randn(8, 32))
    # Linear saves its input (excluded) and weight (excluded); ā is clamped to a.
    assert m.saved_bytes == m.out_bytes == 8 * 16 * FLOAT
    # Backward temporaries: the weight and bias gradients before they are added into .grad.
    assert m.bwd_tmp_bytes >= (32 * 16 + 16) * FLOAT


def test_conv_batchnorm_relu_stage() -> None:
    stage = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
    m = _fast(stage, torch.randn(2, 4, 16, 16))
    a = 2 * 8 * 16 * 16 * FLOAT
    assert m.out_bytes == a
    assert m.saved_bytes == 2 * a + 2 * 8 * FLOAT  # conv output, BN statistics, ReLU output
    assert m.fwd_retained_bytes == m.saved_bytes


def test_measurement_preserves_batchnorm_grads_and_rng() -> None:
    stage = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Dropout(0.5))
    x = torch.randn(2, 3, 8, 8)
    bn = stage[1]
    assert isinstance(bn, nn.BatchNorm2d)
    conv = stage[0]
    assert isinstance(conv, nn.Conv2d)
    before = {k: v.clone() for k, v in stage.state_dict().items()}
    grad = torch.ones_like(conv.weight)
    conv.weight.grad = grad
    state = torch.get_rng_state()

    m = _fast(stage, x)

    for k, v in stage.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert bn.running_mean is not None and bn.num_batches_tracked is not None
    assert int(bn.num_batches_tracked) == 0
    assert conv.weight.grad is grad and torch.equal(grad, torch.ones_like(grad))
    assert conv.bias is not None and conv.bias.grad is None
    assert torch.equal(torch.get_rng_state(), state)
    # The returned output is what a plain forward from the same state and RNG stream gives.
    assert torch.equal(m.output, stage(x).detach())


def test_draws_random_is_the_stages_own_forward() -> None:
    """Only a stage whose forward draws random numbers (dropout) is flagged: the profiler's
    random gradients come from the same generator and must not count (every stage was
    flagged, and each stage's overheads carried 11 RNG states of a 9-stage MLP)."""
    x = torch.randn(4, 8)
    assert not _fast(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), x).draws_random
    assert _fast(nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)), x).draws_random


def test_integer_input_embedding_stage() -> None:
    stage = nn.Embedding(100, 16)
    ids = torch.randint(0, 100, (4, 8))
    m = _fast(stage, ids)
    assert m.out_bytes == m.saved_bytes == 4 * 8 * 16 * FLOAT
    assert m.input_grad_bytes == 0
    assert m.bwd_time_s > 0
    assert m.bwd_tmp_bytes >= 0
    assert ids.grad is None and not ids.requires_grad


def test_stage_without_backward() -> None:
    # Integer input and no parameters: nothing to differentiate, no backward.
    m = _fast(nn.Identity(), torch.arange(12).reshape(3, 4))
    assert m.bwd_times_s == () and m.bwd_time_s == 0.0
    assert m.out_bytes == m.saved_bytes == 12 * 8


def test_tuple_output_is_rejected() -> None:
    lstm = nn.LSTM(4, 4, batch_first=True)
    with pytest.raises(ProfileError, match="one tensor"):
        _fast(lstm, torch.randn(2, 3, 4))


def test_in_place_on_the_input_is_rejected() -> None:
    with pytest.raises(ProfileError, match="in place"):
        _fast(nn.ReLU(inplace=True), torch.randn(2, 4))


def test_bad_options() -> None:
    x = torch.randn(2, 4)
    with pytest.raises(ProfileError, match="repeats"):
        measure_stage(nn.Linear(4, 4), x, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        measure_stage(nn.Linear(4, 4), x, warmup=-1)
    with pytest.raises(ProfileError, match="not on cpu"):
        measure_stage(nn.Linear(4, 4, device="meta"), x)


def _chain_check(model: nn.Sequential, x: torch.Tensor) -> tuple[int, int]:
    """Returns (Σ ā_ℓ over the stages, activation memory the whole forward holds)."""
    total = 0
    h = x
    for stage in model:
        m = measure_stage(stage, h, repeats=1, warmup=1)
        total += m.saved_bytes
        h = m.output
    x_in = x.detach().requires_grad_(x.is_floating_point())
    with MemoryProbe() as probe:
        y = model(x_in)
    del y
    return total, probe.delta_bytes


def test_chain_saved_bytes_match_activation_memory_cnn() -> None:
    model = nn.Sequential(
        nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
        nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                      nn.ReLU()),
        nn.Sequential(nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10)),
    )
    total, whole = _chain_check(model, torch.randn(4, 3, 16, 16))
    assert abs(total - whole) <= 0.10 * whole, (total, whole)


def test_chain_saved_bytes_match_activation_memory_transformer() -> None:
    model = nn.Sequential(
        *[nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True) for _ in range(3)]
    )
    total, whole = _chain_check(model, torch.randn(2, 16, 32))
    assert abs(total - whole) <= 0.10 * whole, (total, whole)


def test_fine_grained_chain_overcounts_unsaved_outputs_exactly() -> None:
    # rotor's model keeps every stage output (ā_ℓ ⊇ a_ℓ), but a real forward frees outputs no
    # backward needs: BatchNorm's output (ReLU saves its own output) and Flatten's output
    # (a view of the MaxPool output, counted again). The difference is exactly those.
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 8 * 8, 10),
    )
    total, whole = _chain_check(model, torch.randn(4, 3, 16, 16))
    bn_out = 4 * 8 * 16 * 16 * FLOAT
    flat_out = 4 * 8 * 8 * 8 * FLOAT
    assert total - whole == bn_out + flat_out


def test_loss_stage() -> None:
    logits = torch.randn(16, 10)
    target = torch.randint(0, 10, (16,))
    loss_fn = nn.CrossEntropyLoss()
    m = measure_loss(loss_fn, logits, target, repeats=2, warmup=1)
    assert m.grad_bytes == logits.numel() * FLOAT
    # Cross-entropy keeps its log-softmax (the size of the logits) for the backward.
    assert m.saved_bytes >= logits.numel() * FLOAT
    assert m.fwd_tmp_bytes >= m.saved_bytes
    assert m.bwd_tmp_bytes >= m.saved_bytes - m.grad_bytes
    assert len(m.fwd_times_s) == len(m.bwd_times_s) == 2
    assert logits.grad is None


def test_loss_must_be_a_scalar() -> None:
    with pytest.raises(ProfileError, match="one-element"):
        measure_loss(nn.MSELoss(reduction="none"), torch.randn(4, 3), torch.randn(4, 3))
    with pytest.raises(ProfileError, match="does not depend"):
        measure_loss(lambda out, target: target.sum(), torch.randn(4), torch.randn(4))
    with pytest.raises(ProfileError, match="floating point"):
        measure_loss(nn.MSELoss(), torch.ones(4, dtype=torch.long), torch.ones(4))
