"""What measuring a stage and measuring the loss share: argument checks, the device, fresh
random gradients, and running a module without changing its state (buffers, ``.grad``,
random-number streams) — each measurement restores them on return, also on error."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.sizes import nbytes

__all__ = [
    "check_counts",
    "check_module_device",
    "param_bytes",
    "preallocate_grads",
    "preserved",
    "random_as",
    "random_like",
    "resolve_device",
    "single_tensor",
    "timed",
]

_T = TypeVar("_T")

def check_counts(*, repeats: int, warmup: int) -> None:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ProfileError(f"repeats must be an integer ≥ 1 (repeats: {repeats!r})")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ProfileError(f"warmup must be an integer ≥ 0 (warmup: {warmup!r})")


def resolve_device(device: torch.device | str | None, x: torch.Tensor) -> torch.device:
    try:
        dev = torch.device(device) if device is not None else x.device
    except RuntimeError as err:
        raise ProfileError(f"unknown device ({device!r})") from err
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ProfileError(f"CUDA is not available (device: {dev})")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
    elif dev.type != "cpu":
        raise ProfileError(f"stages can be measured on the CPU and CUDA devices (device: {dev})")
    return dev


def check_module_device(module: nn.Module, dev: torch.device) -> None:
    for name, t in [*module.named_parameters(), *module.named_buffers()]:
        tdev = t.device
        if tdev.type != dev.type or (dev.type == "cuda" and tdev.index != dev.index):
            raise ProfileError(f"module tensor {name} is on {tdev}, not on {dev}")


def single_tensor(result: object, *, what: str) -> torch.Tensor:
    if not isinstance(result, torch.Tensor):
        raise ProfileError(
            f"{what} must return one tensor (got {type(result).__name__}); wrap the module "
            "so that it returns a single tensor"
        )
    return result


def random_like(t: torch.Tensor) -> torch.Tensor:
    # specs/rotor.md §1.4: "an arbitrary tensor for δ_ℓ (generated randomly with the same
    # shape and size as a tensor a_ℓ)".
    return torch.randn_like(t, memory_format=torch.preserve_format)


def random_as(layout: torch.Tensor, dev: torch.device) -> torch.Tensor:
    # random_like for a tensor already freed: ``layout`` is its meta-device twin.
    return torch.empty_strided(layout.size(), layout.stride(), dtype=layout.dtype,
                               device=dev).normal_()


def param_bytes(module: nn.Module) -> int:
    # Parameters shared between submodules are yielded once by parameters().
    return sum(nbytes(p) for p in module.parameters())


def preallocate_grads(module: nn.Module) -> None:
    # specs/rotor.md §7 item 20: weight gradients live outside the activation budget, so the
    # measured backward must not allocate them.
    for p in module.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)


@contextmanager
def preserved(module: nn.Module | None, dev: torch.device) -> Iterator[Callable[[], None]]:
    """Snapshots buffers, ``.grad`` and RNG streams; yields a restore function; restores at exit.

    The yielded function puts back the buffers' values and the RNG streams (used before the
    memory run, so that it starts from the original state); leaving the block also puts back
    every buffer object and every parameter's original ``.grad``.
    """
    buffers: list[tuple[nn.Module, str, torch.Tensor, torch.Tensor]] = []
    grads: list[tuple[nn.Parameter, torch.Tensor | None]] = []
    if module is not None:
        for sub in module.modules():
            for name, buf in sub._buffers.items():
                if buf is not None:
                    buffers.append((sub, name, buf, buf.detach().clone()))
        grads = [(p, p.grad) for p in module.parameters()]
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None

    def restore() -> None:
        with torch.no_grad():
            for sub, name, buf, snapshot in buffers:
                if sub._buffers.get(name) is not buf:
                    sub._buffers[name] = buf
                buf.copy_(snapshot)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, dev)

    try:
        yield restore
    finally:
        restore()
        for p, grad in grads:
            p.grad = grad


def timed(fn: Callable[[], _T], dev: torch.device) -> tuple[_T, float]:
    """Runs ``fn`` once; returns its result and its duration (seconds)."""
    if dev.type == "cuda":
        with torch.cuda.device(dev):
            event: Any = torch.cuda.Event  # untyped in torch's stubs
            start = event(enable_timing=True)
            end = event(enable_timing=True)
            torch.cuda.synchronize(dev)
            start.record()
            result = fn()
            end.record()
            end.synchronize()
            return result, float(start.elapsed_time(end)) / 1e3
    begin = time.perf_counter_ns()
    result = fn()
    return result, (time.perf_counter_ns() - begin) / 1e9


def timed_passes(forward: Callable[[], _T], backward_of: Callable[[_T], Callable[[], Any]],
                 runs: int, dev: torch.device,
                 after_backward: Callable[[], None] | None = None
                 ) -> tuple[list[float], list[float]]:
    """``runs`` timed forwards, then ``runs`` timed backwards, each on a fresh untimed
    forward; returns both lists of durations (seconds), in run order.

    ``backward_of(result)`` gives the backward to time on a forward's result (its seeds,
    such as a random output gradient, drawn outside the timing); ``after_backward`` runs
    after each backward (to drop the input's gradient). Every result is dropped before the
    next run, so no run holds another's activations.
    """
    fwd_times: list[float] = []
    for _ in range(runs):
        result, elapsed = timed(forward, dev)
        fwd_times.append(elapsed)
        del result
    bwd_times: list[float] = []
    for _ in range(runs):
        backward = backward_of(forward())
        _, elapsed = timed(backward, dev)
        bwd_times.append(elapsed)
        del backward
        if after_backward is not None:
            after_backward()
    return fwd_times, bwd_times
