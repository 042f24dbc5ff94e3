"""SavedTensorProbe: what autograd keeps for backward, stage input and weights left out."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.saved import SavedTensorProbe
from tests.profiler.helpers import DEVICES


def _saved(module: nn.Module, x: torch.Tensor) -> tuple[SavedTensorProbe, torch.Tensor]:
    with SavedTensorProbe(module=module, exclude=[x]) as saved:
        y = module(x)
    return saved, y


@pytest.mark.parametrize("device", DEVICES)
def test_linear_saves_nothing_new(device: str) -> None:
    # Linear saves its input (the stage input, excluded) and its weight (a parameter).
    layer = nn.Linear(32, 16).to(device)
    x = torch.randn(8, 32, device=device, requires_grad=True)
    saved, y = _saved(layer, x)
    assert (saved.saved_bytes, saved.saved_count) == (0, 0)
    assert saved.packed_count >= 2
    assert not saved.is_saved(y)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_relu_saves_the_stage_output(device: str) -> None:
    stage = nn.Sequential(nn.Linear(32, 16), nn.ReLU()).to(device)
    x = torch.randn(8, 32, device=device, requires_grad=True)
    saved, y = _saved(stage, x)
    # The Linear output feeds ReLU, which saves its result (the stage output) instead.
    assert saved.saved_count == 1
    assert saved.saved_bytes == y.numel() * y.element_size() == 8 * 16 * 4
    assert saved.is_saved(y)


def test_conv_batchnorm_relu() -> None:
    stage = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
    x = torch.randn(2, 4, 16, 16, requires_grad=True)
    saved, y = _saved(stage, x)
    act = 2 * 8 * 16 * 16 * 4  # one float32 activation of the block
    # Conv2d keeps x (excluded) and its weight; BatchNorm2d keeps the conv output and its
    # per-channel mean and inverse std (8 floats each); ReLU keeps its output.
    assert saved.saved_count == 4
    assert saved.saved_bytes == 2 * act + 2 * 8 * 4
    assert saved.is_saved(y)


def test_views_of_one_storage_count_once() -> None:
    x = torch.randn(64, requires_grad=True)
    with SavedTensorProbe(exclude=[x]) as saved:
        h = x * 2
        y = h[:32].sin() + h[32:].cos()  # both halves of h are saved: one storage
    assert saved.saved_count == 1
    assert saved.saved_bytes == 64 * 4
    del y


def test_transformer_layer_matches_allocated_memory() -> None:
    # Independent check: what the forward leaves allocated is what autograd saved plus the
    # output (dropout off so that nothing else differs).
    # The allocator's events are process-wide: a block allocated before the region and freed
    # inside it by another thread lowers the delta by its size (64 bytes once on CI). A
    # wrong count is wrong every time, so one exact match in three tries is the check.
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    x = torch.randn(2, 16, 32, requires_grad=True)
    tries = []
    for _ in range(3):
        with MemoryProbe() as probe, SavedTensorProbe(module=layer, exclude=[x]) as saved:
            y = layer(x)
        kept = saved.saved_bytes + (0 if saved.is_saved(y) else y.untyped_storage().nbytes())
        tries.append((kept, probe.delta_bytes))
        if kept == probe.delta_bytes:
            break
        del y
    assert any(k == d for k, d in tries), tries


def test_results_need_a_closed_region() -> None:
    probe = SavedTensorProbe()
    with pytest.raises(ProfileError, match="after"):
        _ = probe.saved_bytes
    with probe:
        pass
    assert (probe.saved_bytes, probe.saved_count) == (0, 0)
    with pytest.raises(ProfileError, match="single-use"), probe:
        pass
