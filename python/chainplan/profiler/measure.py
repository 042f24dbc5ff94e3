"""Measuring one chain stage, or the loss, the way rotor's dynamic program counts it.

Implements the profiling recipe of ``specs/rotor.md`` §7 item 25 (see also §1.2-1.4 and items
20-23) for a single stage ``F_ℓ``: its input ``x = a_{ℓ-1}`` is present and detached, weight
gradients are already allocated, and

* ``a_ℓ`` (``out_bytes``) is ``numel × element_size`` of the output;
* ``ā_ℓ`` (``saved_bytes``) is everything ``F_ℓ^all`` keeps for ``B_ℓ``: the unique storages
  autograd saves (:class:`~chainplan.profiler.saved.SavedTensorProbe`, parameters, buffers
  and the input left out) plus the output's storage when no operation saved it, clamped to
  at least ``a_ℓ`` (item 7);
* ``o_F(ℓ)`` (``fwd_tmp_bytes``) is ``max(0, peak_F − ā_ℓ)``, the forward's peak above the
  memory present before it, minus what it keeps, so that ``M_{F^all} = ā + o_F``;
* ``o_B(ℓ)`` (``bwd_tmp_bytes``) is ``max(0, peak_B − δ_ℓ − δ_{ℓ-1})``: the backward's peak
  above the memory present before it (``a_{ℓ-1}`` and ``ā_ℓ``), measured from before ``δ_ℓ``
  is created, minus the two gradients the model already counts;
* ``u_F``/``u_B`` are medians over ``repeats`` runs after ``warmup`` runs, each backward on a
  fresh forward (only the backward is timed; item 23), with device synchronization and CUDA
  events on GPUs.

Memory is measured with :class:`~chainplan.profiler.memory.MemoryProbe` in one forward and
backward run whose forward starts from the module's original state and random-number stream,
so its output (returned for chaining into stage ℓ+1) is the output of a plain forward. No run
changes the module's buffers (BatchNorm running statistics), the parameters' ``.grad`` or the
random-number streams: all are restored on return, also on error.

Usage::

    x = sample
    stages = []
    for stage in model:                       # an nn.Sequential chain
        m = measure_stage(stage, x, repeats=5, warmup=1)
        stages.append(m)
        x = m.output
    loss = measure_loss(nn.functional.cross_entropy, x, target)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import torch
from torch import nn
from torch.autograd.graph import get_gradient_edge

from chainplan.errors import ProfileError
from chainplan.gradrelease import backward_step
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.profiler.sizes import nbytes, shares_storage, storage_nbytes

__all__ = ["ChainEnd", "LossMeasurement", "StageMeasurement", "chain_end", "measure_loss",
           "measure_stage"]

_T = TypeVar("_T")

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class StageMeasurement:
    """What one stage costs: times in seconds, sizes in bytes (``specs/rotor.md`` §1.2).

    Attributes:
        fwd_time_s: ``u_F``, median forward time (seconds).
        bwd_time_s: ``u_B``, median backward time (seconds); 0 when the output needs no
            gradient.
        out_bytes: ``a_ℓ``, bytes of the output (numel × element size).
        saved_bytes: ``ā_ℓ``, bytes the forward keeps for the backward, output included
            (≥ ``out_bytes``).
        fwd_tmp_bytes: ``o_F``, forward temporary bytes on top of input and ``ā_ℓ``.
        bwd_tmp_bytes: ``o_B``, backward temporary bytes on top of input, ``ā_ℓ`` and both
            gradients.
        param_bytes: bytes of the stage's parameters (shared parameters counted once;
            buffers not counted).
        fwd_times_s: every timed forward (seconds), in run order.
        bwd_times_s: every timed backward (seconds), in run order; empty without backward.
        input_grad_bytes: ``δ_{ℓ-1}``, bytes of the input gradient the backward produced (0
            for integer inputs or an input the output does not depend on).
        fwd_retained_bytes: allocated-memory increase over the measured forward (bytes), an
            independent check of ``saved_bytes`` (it also sees tensors kept outside
            autograd's saved tensors, and misses outputs aliasing their input).
        fwd_peak_bytes: the forward's peak above the memory present before it (bytes),
            ``saved_bytes + fwd_tmp_bytes`` whenever the overhead is not clamped at 0.
        kept_bytes: what the backward needs besides the input and an output that no
            operation saved (bytes): ``saved_bytes`` for a stage whose output a loss
            consumes (:func:`consumed_output`).
        output_kept: whether the stage itself keeps its output storage alive for the
            backward (an operation saved it, or it aliases the input).
        output: the stage output, detached, for measuring the next stage.
    """

    fwd_time_s: float
    bwd_time_s: float
    out_bytes: int
    saved_bytes: int
    fwd_tmp_bytes: int
    bwd_tmp_bytes: int
    param_bytes: int
    fwd_times_s: tuple[float, ...]
    bwd_times_s: tuple[float, ...]
    input_grad_bytes: int
    fwd_retained_bytes: int
    fwd_peak_bytes: int
    kept_bytes: int
    output_kept: bool
    output: torch.Tensor = field(repr=False, compare=False)


@dataclass(frozen=True)
class LossMeasurement:
    """What the loss stage ``L+1`` costs: times in seconds, sizes in bytes.

    The rotor model sets ``a_{L+1} = ā_{L+1} = 0`` and puts whatever the loss keeps for its
    backward into its overheads (``specs/rotor.md`` §1.2 and §7 item 6).

    Attributes:
        fwd_time_s: ``u_F(L+1)``, median loss forward time (seconds).
        bwd_time_s: ``u_B(L+1)``, median loss backward time (seconds).
        fwd_tmp_bytes: ``o_F(L+1)``, the loss forward's peak above the memory before it
            (bytes), including what it keeps for the backward.
        bwd_tmp_bytes: ``o_B(L+1)``, what the loss keeps for its backward plus the backward's
            peak above the memory before it, minus ``δ_L`` (bytes).
        fwd_times_s: every timed loss forward (seconds), in run order.
        bwd_times_s: every timed loss backward (seconds), in run order.
        grad_bytes: ``δ_L``, bytes of the gradient with respect to the loss input.
        saved_bytes: bytes the loss forward keeps for its backward (saved tensors and the
            loss value), part of both overheads.
        input_kept: whether the loss's backward needs its input ``a_L`` (e.g. a mean
            squared error); a cross-entropy keeps its log-softmax instead and lets ``a_L``
            go as soon as its forward is done.
        held_bytes: what the loss leaves in memory after its backward besides ``δ_L``
            (bytes): memory the loss value keeps until the script drops it, after the
            step. PyTorch's mean squared error and binary cross-entropy return a scalar
            whose storage is the unreduced buffer, ``a_L`` bytes, held through every
            later backward.
    """

    fwd_time_s: float
    bwd_time_s: float
    fwd_tmp_bytes: int
    bwd_tmp_bytes: int
    fwd_times_s: tuple[float, ...]
    bwd_times_s: tuple[float, ...]
    grad_bytes: int
    saved_bytes: int
    input_kept: bool
    held_bytes: int


def measure_stage(
    module: nn.Module,
    x: torch.Tensor,
    *,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str | None = None,
) -> StageMeasurement:
    """Measures one chain stage: times, activation sizes and temporary memory.

    Args:
        module: the stage; it must return a single tensor and already sit on ``device``.
        x: a sample input ``a_{ℓ-1}``. Floating-point inputs get ``requires_grad`` (on a
            detached alias; ``x`` itself is untouched); integer inputs, e.g. token ids, get
            no input gradient.

    Keyword Args:
        repeats: timed forward runs and timed backward runs, ≥ 1 (default: 5).
        warmup: untimed forward+backward runs before measuring, ≥ 0 (default: 1).
        device: the device to run on (default: ``x.device``); ``x`` is moved there.

    Returns:
        The stage's :class:`StageMeasurement`, with its output detached in ``output``.

    Raises:
        ProfileError: an option is out of range, the device is unsupported, the module has
            tensors on another device, the stage modifies its input in place, or it does not
            return exactly one tensor.

    .. note::
        The module's buffers, its parameters' ``.grad``, its training mode and the global
        random-number streams are the same after the call as before. Another profiler must
        not run on the calling thread while it measures on the CPU.
    """
    _check_counts(repeats=repeats, warmup=warmup)
    if not isinstance(x, torch.Tensor):
        raise ProfileError(f"stage input must be a tensor (got {type(x).__name__})")
    dev = _resolve_device(device, x)
    _check_module_device(module, dev)
    x = x.to(dev)
    x_in = x.detach()
    input_needs_grad = x_in.is_floating_point() or x_in.is_complex()
    if input_needs_grad:
        x_in.requires_grad_(True)

    def forward() -> torch.Tensor:
        with torch.enable_grad():
            try:
                result = module(x_in)
            except RuntimeError as err:
                if "leaf Variable" in str(err) and "in-place" in str(err):
                    raise ProfileError(
                        "the stage modifies its input in place; a chain stage must keep its "
                        "input a_{ℓ-1} intact (e.g. put an in-place ReLU inside the stage "
                        f"before it, not at its start) ({err})"
                    ) from err
                raise
            return _single_tensor(result, what="a chain stage")

    with _preserved(module, dev) as restore:
        _preallocate_grads(module)
        for _ in range(warmup):
            out = forward()
            if out.requires_grad:
                torch.autograd.backward(out, _random_like(out))
            x_in.grad = None
            del out
        restore()

        # The memory run: one forward and one backward under probes. The outer probe makes
        # the CPU probe see the backward free what the forward saved.
        with MemoryProbe(device=dev):
            with (
                SavedTensorProbe(module=module, exclude=[x_in]) as saved,
                MemoryProbe(device=dev) as fwd,
            ):
                out = forward()
            has_backward = out.requires_grad
            output_kept = saved.is_saved(out) or shares_storage(out, x_in)
            # The output goes on to the next stage as a copy, taken before the backward
            # probe (a constant there), so that the backward starts from a_ℓ's gradient
            # edge and autograd frees a_ℓ when the operation that saved it is done with it,
            # as the executor's B_ℓ does (executors/runner.py).
            with torch.no_grad():
                output = out.detach().clone() if has_backward else out.detach()
            bwd: MemoryProbe | None = None
            if has_backward:
                edge = get_gradient_edge(out)
                layout = torch.empty_like(out, memory_format=torch.preserve_format,
                                          device="meta")  # δ_ℓ's shape and strides, no data
                del out
                with MemoryProbe(device=dev) as bwd:
                    delta = _random_as(layout, dev)
                    backward_step(edge, delta, owned=True)  # as the executor's B_ℓ
                    del delta
                del edge
            else:
                del out
        input_grad_bytes = nbytes(x_in.grad) if x_in.grad is not None else 0
        x_in.grad = None

        out_bytes = nbytes(output)
        kept_bytes = saved.saved_bytes
        if not output_kept:
            kept_bytes += storage_nbytes(output)
        saved_bytes = max(kept_bytes, out_bytes)
        fwd_tmp_bytes = max(0, fwd.peak_bytes - saved_bytes)
        bwd_tmp_bytes = 0
        if bwd is not None:
            bwd_tmp_bytes = max(0, bwd.peak_bytes - out_bytes - input_grad_bytes)

        fwd_times: list[float] = []
        for _ in range(repeats):
            out, elapsed = _timed(forward, dev)
            fwd_times.append(elapsed)
            del out
        bwd_times: list[float] = []
        if has_backward:
            for _ in range(repeats):
                out = forward()
                delta = _random_like(out)
                _, elapsed = _timed(partial(torch.autograd.backward, out, delta), dev)
                bwd_times.append(elapsed)
                x_in.grad = None
                del out, delta

    return StageMeasurement(
        fwd_time_s=statistics.median(fwd_times),
        bwd_time_s=statistics.median(bwd_times) if bwd_times else 0.0,
        out_bytes=out_bytes,
        saved_bytes=saved_bytes,
        fwd_tmp_bytes=fwd_tmp_bytes,
        bwd_tmp_bytes=bwd_tmp_bytes,
        param_bytes=_param_bytes(module),
        fwd_times_s=tuple(fwd_times),
        bwd_times_s=tuple(bwd_times),
        input_grad_bytes=input_grad_bytes,
        fwd_retained_bytes=fwd.delta_bytes,
        fwd_peak_bytes=fwd.peak_bytes,
        kept_bytes=saved.saved_bytes,
        output_kept=output_kept,
        output=output,
    )


def measure_loss(
    loss_fn: LossFn,
    out: torch.Tensor,
    target: torch.Tensor,
    *,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str | None = None,
) -> LossMeasurement:
    """Measures the loss stage ``L+1``: its times and temporary memory.

    Args:
        loss_fn: called as ``loss_fn(out, target)``; must return a one-element tensor. An
            ``nn.Module`` (e.g. ``nn.CrossEntropyLoss()``) keeps its buffers unchanged.
        out: the chain's output ``a_L`` (floating point); a detached alias gets
            ``requires_grad``.
        target: the target the loss compares ``out`` with.

    Keyword Args:
        repeats: timed forward runs and timed backward runs, ≥ 1 (default: 5).
        warmup: untimed forward+backward runs before measuring, ≥ 0 (default: 1).
        device: the device to run on (default: ``out.device``); tensors are moved there.

    Returns:
        The loss's :class:`LossMeasurement`.

    Raises:
        ProfileError: an option is out of range, the device is unsupported, ``out`` is not
            floating point, or the loss is not a single one-element tensor that depends on
            ``out``.
    """
    _check_counts(repeats=repeats, warmup=warmup)
    if not isinstance(out, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise ProfileError("the chain output and the target must be tensors")
    if not (out.is_floating_point() or out.is_complex()):
        raise ProfileError(f"loss input must be floating point (dtype: {out.dtype})")
    dev = _resolve_device(device, out)
    module = loss_fn if isinstance(loss_fn, nn.Module) else None
    if module is not None:
        _check_module_device(module, dev)
    a_in = out.detach().to(dev).requires_grad_(True)
    tgt = target.detach().to(dev)

    def forward() -> torch.Tensor:
        with torch.enable_grad():
            loss = _single_tensor(loss_fn(a_in, tgt), what="a loss")
        if loss.numel() != 1:
            raise ProfileError(f"a loss must be a one-element tensor (shape: {tuple(loss.shape)})")
        if not loss.requires_grad:
            raise ProfileError("the loss does not depend on the chain output")
        return loss

    with _preserved(module, dev) as restore:
        for _ in range(warmup):
            loss = forward()
            torch.autograd.backward(loss)
            a_in.grad = None
            del loss
        restore()

        with MemoryProbe(device=dev):
            with (
                SavedTensorProbe(module=module, exclude=[a_in, tgt]) as saved,
                MemoryProbe(device=dev) as fwd,
            ):
                loss = forward()
            kept = saved.saved_bytes
            input_kept = saved.is_packed(a_in)
            if not saved.is_saved(loss):
                kept += storage_nbytes(loss)
            with MemoryProbe(device=dev) as bwd:
                torch.autograd.backward(loss)
            # The loss value is alive until here, as in a training step (loss.backward()).
            del loss
        held = fwd.delta_bytes + bwd.delta_bytes
        grad_bytes = nbytes(a_in.grad) if a_in.grad is not None else 0
        a_in.grad = None

        fwd_times: list[float] = []
        for _ in range(repeats):
            loss, elapsed = _timed(forward, dev)
            fwd_times.append(elapsed)
            del loss
        bwd_times: list[float] = []
        for _ in range(repeats):
            loss = forward()
            _, elapsed = _timed(partial(torch.autograd.backward, loss), dev)
            bwd_times.append(elapsed)
            a_in.grad = None
            del loss

    return LossMeasurement(
        fwd_time_s=statistics.median(fwd_times),
        bwd_time_s=statistics.median(bwd_times),
        fwd_tmp_bytes=fwd.peak_bytes,
        bwd_tmp_bytes=max(0, kept + bwd.peak_bytes - grad_bytes),
        fwd_times_s=tuple(fwd_times),
        bwd_times_s=tuple(bwd_times),
        grad_bytes=grad_bytes,
        saved_bytes=kept,
        input_kept=input_kept,
        held_bytes=max(0, held - grad_bytes),
    )


@dataclass(frozen=True)
class ChainEnd:
    """The memory columns of the last stage and of the loss, as the executor runs them.

    Attributes:
        saved_bytes: ``ā_L``, what stays in memory from the last stage's forward to its
            backward.
        fwd_tmp_bytes: ``o_F(L)``, the last forward's peak on top of ``ā_L``.
        loss_fwd_tmp_bytes: ``o_F(L+1)``, the loss forward's peak, plus ``a_L`` when the
            loss consumes it (``a_L`` is then no longer part of ``ā_L``).
        held_bytes: what the loss value holds from the loss to the end of the step
            (:attr:`LossMeasurement.held_bytes`). The chain model has no place for memory
            held through the whole backward phase, so the profiler adds it to every
            stage's overheads: exact after the loss, where the peaks are, and an
            over-estimate before it.
    """

    saved_bytes: int
    fwd_tmp_bytes: int
    loss_fwd_tmp_bytes: int
    held_bytes: int = 0


def chain_end(last: StageMeasurement, loss: LossMeasurement | None) -> ChainEnd:
    """How the chain's output is counted: held until ``B_L``, or consumed by the loss.

    The executors hand ``a_L`` to the training script and keep no reference to it, so when
    neither the last stage nor the loss saves it for a backward, it lives only until the
    loss forward is done: the model then counts it in the loss forward's overhead
    ``o_F(L+1)`` instead of in ``ā_L``, which may become smaller than ``a_L``
    (docs/formats.md). Without a measured loss nothing is known about what the script does
    with ``a_L``, and it stays in ``ā_L`` as for every other stage.
    """
    if loss is None:
        return ChainEnd(last.saved_bytes, last.fwd_tmp_bytes, 0)
    if last.output_kept or loss.input_kept:
        return ChainEnd(last.saved_bytes, last.fwd_tmp_bytes, loss.fwd_tmp_bytes,
                        loss.held_bytes)
    return ChainEnd(last.kept_bytes, max(0, last.fwd_peak_bytes - last.kept_bytes),
                    loss.fwd_tmp_bytes + last.out_bytes, loss.held_bytes)


def _check_counts(*, repeats: int, warmup: int) -> None:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ProfileError(f"repeats must be an integer ≥ 1 (repeats: {repeats!r})")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ProfileError(f"warmup must be an integer ≥ 0 (warmup: {warmup!r})")


def _resolve_device(device: torch.device | str | None, x: torch.Tensor) -> torch.device:
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


def _check_module_device(module: nn.Module, dev: torch.device) -> None:
    for name, t in [*module.named_parameters(), *module.named_buffers()]:
        tdev = t.device
        if tdev.type != dev.type or (dev.type == "cuda" and tdev.index != dev.index):
            raise ProfileError(f"module tensor {name} is on {tdev}, not on {dev}")


def _single_tensor(result: object, *, what: str) -> torch.Tensor:
    if not isinstance(result, torch.Tensor):
        raise ProfileError(
            f"{what} must return one tensor (got {type(result).__name__}); wrap the module "
            "so that it returns a single tensor"
        )
    return result


def _random_like(t: torch.Tensor) -> torch.Tensor:
    # specs/rotor.md §1.4: "an arbitrary tensor for δ_ℓ (generated randomly with the same
    # shape and size as a tensor a_ℓ)".
    return torch.randn_like(t, memory_format=torch.preserve_format)


def _random_as(layout: torch.Tensor, dev: torch.device) -> torch.Tensor:
    # _random_like for a tensor already freed: ``layout`` is its meta-device twin.
    return torch.empty_strided(layout.size(), layout.stride(), dtype=layout.dtype,
                               device=dev).normal_()


def _param_bytes(module: nn.Module) -> int:
    # Parameters shared between submodules are yielded once by parameters().
    return sum(nbytes(p) for p in module.parameters())


def _preallocate_grads(module: nn.Module) -> None:
    # specs/rotor.md §7 item 20: weight gradients live outside the activation budget, so the
    # measured backward must not allocate them.
    for p in module.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)


@contextmanager
def _preserved(module: nn.Module | None, dev: torch.device) -> Iterator[Callable[[], None]]:
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


def _timed(fn: Callable[[], _T], dev: torch.device) -> tuple[_T, float]:
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
