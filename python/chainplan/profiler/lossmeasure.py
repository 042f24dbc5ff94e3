"""Measuring the loss, and how the chain's output is counted at its end.

The loss is measured as stage ``L+1`` of rotor's model (``specs/rotor.md`` §1.2): its
forward and backward times and temporaries, what it keeps for its backward and what its
value holds until the end of the step; :func:`chain_end` decides whether ``a_L`` stays in
``ā_L`` or moves into the loss's overheads (docs/formats.md, "The chain's output").
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.measuring import (
    check_counts,
    check_module_device,
    preserved,
    resolve_device,
    single_tensor,
    timed,
    timed_passes,
)
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.profiler.sizes import nbytes, storage_nbytes
from chainplan.profiler.stagemeasure import StageMeasurement

__all__ = ["ChainEnd", "LossMeasurement", "chain_end", "measure_loss", "own_loss", "time_loss"]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


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


def measure_loss(
    loss_fn: LossFn,
    out: torch.Tensor,
    target: torch.Tensor,
    *,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str | None = None,
    timed_runs: int | None = None,
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
        timed_runs: timed forward runs and timed backward runs, ≥ 1 (default:
            ``repeats``); ``profile()`` times one here and the others in its rounds over
            the chain (:func:`time_loss`).

    Returns:
        The loss's :class:`LossMeasurement`.

    Raises:
        ProfileError: an option is out of range, the device is unsupported, ``out`` is not
            floating point, or the loss is not a single one-element tensor that depends on
            ``out``.
    """
    check_counts(repeats=repeats, warmup=warmup)
    timed_runs = repeats if timed_runs is None else timed_runs
    check_counts(repeats=timed_runs, warmup=0)
    if not isinstance(out, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise ProfileError("the chain output and the target must be tensors")
    if not (out.is_floating_point() or out.is_complex()):
        raise ProfileError(f"loss input must be floating point (dtype: {out.dtype})")
    dev = resolve_device(device, out)
    module = loss_fn if isinstance(loss_fn, nn.Module) else None
    if module is not None:
        check_module_device(module, dev)
    a_in = out.detach().to(dev).requires_grad_(True)
    tgt = target.detach().to(dev)
    forward = _loss_forward(loss_fn, a_in, tgt)

    with preserved(module, dev) as restore:
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

        def drop_grad() -> None:
            a_in.grad = None

        fwd_times, bwd_times = timed_passes(
            forward, lambda loss: partial(torch.autograd.backward, loss), timed_runs, dev,
            drop_grad)

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


def _loss_forward(loss_fn: LossFn, a_in: torch.Tensor,
                  tgt: torch.Tensor) -> Callable[[], torch.Tensor]:
    """One forward of the loss with autograd on, checked to be one element that depends on
    the chain output."""

    def forward() -> torch.Tensor:
        with torch.enable_grad():
            loss = single_tensor(loss_fn(a_in, tgt), what="a loss")
        if loss.numel() != 1:
            raise ProfileError(f"a loss must be a one-element tensor (shape: {tuple(loss.shape)})")
        if not loss.requires_grad:
            raise ProfileError("the loss does not depend on the chain output")
        return loss

    return forward


def time_loss(loss_fn: LossFn, out: torch.Tensor, target: torch.Tensor, *,
              device: torch.device | str | None = None) -> tuple[float, float]:
    """One more timed forward and one timed backward (on a fresh forward) of a loss that
    :func:`measure_loss` has measured, for ``profile()``'s rounds over the chain
    (:func:`chainplan.profiler.stagemeasure.time_stage`); the loss module's buffers and the
    random streams are restored."""
    dev = resolve_device(device, out)
    module = loss_fn if isinstance(loss_fn, nn.Module) else None
    a_in = out.detach().to(dev).requires_grad_(True)
    forward = _loss_forward(loss_fn, a_in, target.detach().to(dev))
    with preserved(module, dev):
        loss, fwd_time = timed(forward, dev)
        del loss
        loss = forward()
        _, bwd_time = timed(partial(torch.autograd.backward, loss), dev)
        return fwd_time, bwd_time


@dataclass(frozen=True)
class ChainEnd:
    """The memory columns of the last stage and of the loss, as the executor runs them.

    Attributes:
        saved_bytes: ``ā_L``, what stays in memory from the last stage's forward to its
            backward.
        fwd_tmp_bytes: ``o_F(L)``, the last forward's peak on top of ``ā_L``.
        loss_fwd_tmp_bytes: ``o_F(L+1)``, the loss forward's peak, plus ``a_L`` when the
            loss consumes it (``a_L`` is then no longer part of ``ā_L``).
        loss_bwd_tmp_bytes: ``o_B(L+1)``, the loss backward's overhead, plus ``a_L`` when
            the loss consumes it but the model's output holds it (``holds_end``): the
            loss's measurement takes ``a_L`` as present before it, and the chain model has
            it nowhere else from the loss forward on.
        held_bytes: what stays in memory from the loss to the end of the step: what the
            loss value holds (:attr:`LossMeasurement.held_bytes`), plus ``a_L`` when the
            model's output holds it. The chain model has no place for memory held through
            the whole backward phase, so the profiler adds it to every stage's overheads:
            exact after the loss, where the peaks are, and an over-estimate before it.
        last_bwd_held_bytes: the part of ``held_bytes`` in ``o_B(L)``: all of it, less the
            ``a_L`` the output holds when ``ā_L`` already counts it (the last stage or the
            loss saves ``a_L``: it is then in memory during ``B_L`` once, not twice).
    """

    saved_bytes: int
    fwd_tmp_bytes: int
    loss_fwd_tmp_bytes: int
    loss_bwd_tmp_bytes: int = 0
    held_bytes: int = 0
    last_bwd_held_bytes: int = 0


def chain_end(last: StageMeasurement, loss: LossMeasurement | None, *,
              holds_end: bool = False) -> ChainEnd:
    """How the chain's output is counted: held until ``B_L``, or consumed by the loss.

    The executors hand ``a_L`` to the training script and keep no reference to it, so when
    neither the last stage nor the loss saves it for a backward, it lives only until the
    loss forward is done: the model then counts it in the loss forward's overhead
    ``o_F(L+1)`` instead of in ``ā_L``, which may become smaller than ``a_L``
    (docs/formats.md). Without a measured loss nothing is known about what the script does
    with ``a_L``, and it stays in ``ā_L`` as for every other stage.

    A model that returns its loss next to ``a_L`` (a ``ModelOutput`` with ``loss`` and
    ``logits``, ``holds_end``) keeps ``a_L`` alive in the object the training loop holds
    through ``loss.backward()``: ``a_L`` is then counted in ``held_bytes`` (every stage's
    overheads) and, when the loss consumes it, in the loss backward's overhead as well,
    where a cross-entropy's backward has its peak (``a_L``, its log-softmax, and the two
    gradients of ``a_L``'s size).
    """
    if loss is None:
        return ChainEnd(last.saved_bytes, last.fwd_tmp_bytes, 0)
    held_end = last.out_bytes if holds_end else 0
    if last.output_kept or loss.input_kept:
        return ChainEnd(last.saved_bytes, last.fwd_tmp_bytes, loss.fwd_tmp_bytes,
                        loss.bwd_tmp_bytes, loss.held_bytes + held_end, loss.held_bytes)
    return ChainEnd(last.kept_bytes, max(0, last.fwd_peak_bytes - last.kept_bytes),
                    loss.fwd_tmp_bytes + last.out_bytes, loss.bwd_tmp_bytes + held_end,
                    loss.held_bytes + held_end, loss.held_bytes + held_end)


def own_loss(out: object) -> torch.Tensor | None:
    """The ``loss`` a model returned next to its outputs (a HuggingFace ``ModelOutput`` or
    a dict given ``labels=`` or ``return_loss=True``), or None."""
    loss = out.get("loss") if isinstance(out, dict) else getattr(out, "loss", None)
    return loss if isinstance(loss, torch.Tensor) else None
