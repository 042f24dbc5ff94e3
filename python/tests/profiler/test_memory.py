"""MemoryProbe on exactly known allocation patterns."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from chainplan.errors import ChainplanError, ProfileError
from chainplan.profiler import allocevents
from chainplan.profiler.memory import MemoryProbe
from tests.profiler.helpers import DEVICES, MiB


def _bytes(n: int, device: str) -> torch.Tensor:
    return torch.empty(n, dtype=torch.uint8, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_alloc_free_alloc(device: str) -> None:
    # The brief's case: 4 MiB allocated and freed, then 1 MiB kept.
    with MemoryProbe(device=device) as probe:
        a = _bytes(4 * MiB, device)
        del a
        b = _bytes(1 * MiB, device)
    assert probe.peak_bytes == 4 * MiB
    assert probe.delta_bytes == 1 * MiB
    del b


@pytest.mark.parametrize("device", DEVICES)
def test_free_inside_outer_probe_is_seen(device: str) -> None:
    with MemoryProbe(device=device):
        kept = _bytes(2 * MiB, device)
        with MemoryProbe(device=device) as inner:
            del kept
            c = _bytes(1 * MiB, device)
    assert inner.delta_bytes == -1 * MiB
    assert inner.peak_bytes == 0  # memory never rose above the level at entry
    del c


@pytest.mark.parametrize("device", DEVICES)
def test_reset_peak(device: str) -> None:
    with MemoryProbe(device=device) as probe:
        a = _bytes(4 * MiB, device)
        del a
        probe.reset_peak()
        b = _bytes(1 * MiB, device)
    assert probe.peak_bytes == 1 * MiB
    assert probe.delta_bytes == 1 * MiB
    del b


@pytest.mark.parametrize("device", DEVICES)
def test_nested_probes_keep_their_own_peaks(device: str) -> None:
    with MemoryProbe(device=device) as outer:
        a = _bytes(3 * MiB, device)
        del a
        with MemoryProbe(device=device) as inner:
            b = _bytes(1 * MiB, device)
        c = _bytes(2 * MiB, device)
    assert (inner.peak_bytes, inner.delta_bytes) == (1 * MiB, 1 * MiB)
    assert (outer.peak_bytes, outer.delta_bytes) == (3 * MiB, 3 * MiB)
    del b, c


@pytest.mark.parametrize("device", DEVICES)
def test_linear_forward_output_size(device: str) -> None:
    layer = nn.Linear(256, 512).to(device)
    x = torch.randn(64, 256, device=device)
    with torch.no_grad():
        layer(x)  # the first CUDA matmul allocates cuBLAS's workspace; keep it out
    with torch.no_grad(), MemoryProbe(device=device) as probe:
        y = layer(x)
    out_bytes = 64 * 512 * 4
    assert probe.delta_bytes == out_bytes
    assert probe.peak_bytes == out_bytes
    del y


def test_linear_backward_counts_gradients() -> None:
    # Backward of y = x W^T + b with pre-allocated weight gradients: x.grad stays (64×256
    # floats), the weight and bias gradients are computed into temporaries, then added in
    # place into .grad, then freed.
    layer = nn.Linear(256, 512)
    for p in layer.parameters():
        p.grad = torch.zeros_like(p)
    x = torch.randn(64, 256, requires_grad=True)
    with MemoryProbe():
        y = layer(x)
        dy = torch.randn_like(y)
        with MemoryProbe() as probe:
            y.backward(dy)
    x_grad, w_grad, b_grad = 64 * 256 * 4, 512 * 256 * 4, 512 * 4
    assert probe.delta_bytes <= x_grad
    assert x_grad + w_grad + b_grad <= probe.peak_bytes <= 1.1 * (x_grad + w_grad + b_grad)


class _AllocatingBackward(torch.autograd.Function):
    """Identity whose backward allocates and frees 8 MiB inside the autograd engine."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty(8 * MiB, dtype=torch.uint8, device=grad.device)
        del scratch
        return grad


@pytest.mark.parametrize("device", DEVICES)
def test_backward_allocations_in_engine_are_counted(device: str) -> None:
    x = torch.randn(1024, device=device, requires_grad=True)
    with MemoryProbe(device=device):
        y = _AllocatingBackward.apply(x)
        with MemoryProbe(device=device) as probe:
            y.sum().backward()
    assert probe.peak_bytes >= 8 * MiB


def test_threads_are_measured_separately() -> None:
    results: dict[int, tuple[int, int]] = {}
    barrier = threading.Barrier(2)

    def work(n: int) -> None:
        with MemoryProbe() as probe:
            barrier.wait()
            a = _bytes(n * MiB, "cpu")
            barrier.wait()
            del a
            b = _bytes(1 * MiB, "cpu")
            barrier.wait()
        results[n] = (probe.peak_bytes, probe.delta_bytes)
        del b

    threads = [threading.Thread(target=work, args=(n,)) for n in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {2: (2 * MiB, 1 * MiB), 3: (3 * MiB, 1 * MiB)}


def test_kineto_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocevents, "prefer_legacy", False)
    with MemoryProbe() as outer:
        a = _bytes(4 * MiB, "cpu")
        del a
        with MemoryProbe() as inner:
            b = _bytes(1 * MiB, "cpu")
    assert (outer.peak_bytes, outer.delta_bytes) == (4 * MiB, 1 * MiB)
    assert (inner.peak_bytes, inner.delta_bytes) == (1 * MiB, 1 * MiB)
    del b


def test_errors() -> None:
    with pytest.raises(ProfileError, match="meta"):
        MemoryProbe(device="meta")
    probe = MemoryProbe()
    with pytest.raises(ProfileError, match="after"):
        _ = probe.peak_bytes
    with pytest.raises(ProfileError, match="open"):
        probe.reset_peak()
    with MemoryProbe() as outer:
        with probe:
            pass
        # On the CPU, results wait for the outermost probe.
        with pytest.raises(ChainplanError, match="outermost"):
            _ = probe.delta_bytes
    assert probe.delta_bytes == 0
    assert outer.peak_bytes == 0
    with pytest.raises(ProfileError, match="single-use"), probe:
        pass


def test_refuses_to_run_under_another_profiler() -> None:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        with pytest.raises(ProfileError, match="already running"), MemoryProbe():
            pass
