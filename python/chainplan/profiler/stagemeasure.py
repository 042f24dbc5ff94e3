"""Measuring one chain stage, or the loss, the way rotor's dynamic program counts it.

Implements the profiling recipe of ``specs/rotor.md`` §7 item 25 (see also §1.2-1.4 and items
20-23) for a single stage ``F_ℓ``: its input ``x = a_{ℓ-1}`` is present and detached, weight
gradients are already allocated, and

* ``a_ℓ`` (``out_bytes``) is the bytes of the output's storage: a view (``h[:, :-1]``)
  keeps its whole base alive (:mod:`chainplan.profiler.sizes`);
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
  events on GPUs;
* the exact memory model (chainplan.chain/v2): whether the backward needs the input
  (``input_kept``) and the output (``output_kept``), and the recomputation the checkpointing
  executor runs right before the backward, which stops at the saved tensors: its time u_R
  and its temporary peak o_R (:mod:`chainplan.profiler.recompute`).

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
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch
from torch import nn
from torch.autograd.graph import get_gradient_edge

from chainplan.errors import ProfileError
from chainplan.gradrelease import backward_step
from chainplan.profiler.measuring import (
    check_counts,
    check_module_device,
    param_bytes,
    preallocate_grads,
    preserved,
    random_as,
    random_like,
    resolve_device,
    single_tensor,
    timed,
)
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.recompute import measure_recompute
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.profiler.sizes import layout_copy, nbytes, shares_storage, storage_nbytes
from chainplan.runtime.recompute import RNGState, not_a_leaf

__all__ = ["StageMeasurement", "measure_stage", "time_stage"]


@dataclass(frozen=True)
class StageMeasurement:
    """What one stage costs: times in seconds, sizes in bytes (``specs/rotor.md`` §1.2).

    Attributes:
        fwd_time_s: ``u_F``, median forward time (seconds).
        bwd_time_s: ``u_B``, median backward time (seconds); 0 when the output needs no
            gradient.
        out_bytes: ``a_ℓ``, bytes of the output's storage (a view holds its base's).
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
        output: the stage output, detached, for measuring the next stage: a copy laid out
            as the output is (:func:`~chainplan.profiler.sizes.layout_copy`).
        input_kept: whether the stage's backward needs its input (an operation saved it or
            a view of it); None when not measured (``chainplan.record``).
        recompute_times_s: every timed recomputation right before the backward, the one
            that stops at the saved tensors (:mod:`chainplan.profiler.recompute`); u_R is
            their median. Empty when not measured.
        recompute_tmp_bytes: o_R, that recomputation's peak above what it leaves for the
            backward (bytes); None when not measured.
        draws_random: whether the stage's forward draws random numbers (dropout): the
            executor then keeps an RNG state to replay it when it recomputes the stage.
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
    input_kept: bool | None = None
    recompute_times_s: tuple[float, ...] = ()
    recompute_tmp_bytes: int | None = None
    draws_random: bool = False


def measure_stage(
    module: nn.Module,
    x: torch.Tensor,
    *,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str | None = None,
    timed_runs: int | None = None,
    output_held: bool = False,
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
        timed_runs: timed forward runs and timed backward runs, ≥ 1 (default:
            ``repeats``); ``profile()`` times one here and the others in rounds across the
            stages (:func:`time_stage`), so that a stretch of contention on the host cannot
            land on every run of one stage.
        output_held: whether the caller holds ``a_ℓ`` to the end of the step (the last
            stage of a model returning its logits next to its loss): when an operation of
            the stage saves its output, the backward is measured with the output still
            held, as in that step, instead of released once the operation is done with it
            (default: False).

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
    check_counts(repeats=repeats, warmup=warmup)
    timed_runs = repeats if timed_runs is None else timed_runs
    check_counts(repeats=timed_runs, warmup=0)
    if not isinstance(x, torch.Tensor):
        raise ProfileError(f"stage input must be a tensor (got {type(x).__name__})")
    dev = resolve_device(device, x)
    check_module_device(module, dev)
    x_in = _stage_input(x, dev)

    forward = _stage_forward(module, x_in, dev)

    with preserved(module, dev) as restore:
        preallocate_grads(module)
        for _ in range(warmup):
            out = forward()
            if out.requires_grad:
                torch.autograd.backward(out, random_like(out))
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
            input_kept = saved.is_packed(x_in)
            # The output goes on to the next stage as a copy, taken before the backward
            # probe (a constant there), so that the backward starts from a_ℓ's gradient
            # edge and autograd frees a_ℓ when the operation that saved it is done with it,
            # as the executor's B_ℓ does (executors/runner.py). The copy keeps the output's
            # layout: the next stage runs on a view as a view (issue 35).
            output = layout_copy(out) if has_backward else out.detach()
            bwd: MemoryProbe | None = None
            if has_backward:
                edge = get_gradient_edge(out)
                layout = torch.empty_like(out, memory_format=torch.preserve_format,
                                          device="meta")  # δ_ℓ's shape and strides, no data
                # a_ℓ held by the caller through the backward (output_held): saved, it is
                # in ā_ℓ and must stay there after its operation's backward releases it.
                held = out.detach() if output_held and output_kept else None
                del out
                with MemoryProbe(device=dev) as bwd:
                    delta = random_as(layout, dev)
                    backward_step(edge, delta, owned=True)  # as the executor's B_ℓ
                    del delta
                del edge, held
            else:
                del out
        input_grad_bytes = nbytes(x_in.grad) if x_in.grad is not None else 0
        x_in.grad = None

        out_bytes = storage_nbytes(output)
        kept_bytes = saved.saved_bytes
        if not output_kept:
            kept_bytes += storage_nbytes(output)
        saved_bytes = max(kept_bytes, out_bytes)
        fwd_tmp_bytes = max(0, fwd.peak_bytes - saved_bytes)
        bwd_tmp_bytes = 0
        if bwd is not None:
            bwd_tmp_bytes = max(0, bwd.peak_bytes - out_bytes - input_grad_bytes)

        # Whether the stage's forward draws random numbers: the state around the timed
        # forwards only, since the profiler's own random gradients (random_like,
        # random_as) draw from the same generator.
        rng = RNGState(dev)
        fwd_times: list[float] = []
        for _ in range(timed_runs):
            out, elapsed = timed(forward, dev)
            fwd_times.append(elapsed)
            del out
        draws_random = rng.consumed()
        bwd_times: list[float] = []
        if has_backward:
            for _ in range(timed_runs):
                out = forward()
                delta = random_like(out)
                _, elapsed = timed(partial(torch.autograd.backward, out, delta), dev)
                bwd_times.append(elapsed)
                x_in.grad = None
                del out, delta
        rec = measure_recompute(module, x_in, repeats=repeats, dev=dev)
        # What the recomputation leaves is ā without an output nothing saved.
        left = saved_bytes - (0 if output_kept else out_bytes)
        recompute_tmp_bytes = max(0, rec.peak_bytes - left)

    return StageMeasurement(
        fwd_time_s=statistics.median(fwd_times),
        bwd_time_s=statistics.median(bwd_times) if bwd_times else 0.0,
        out_bytes=out_bytes,
        saved_bytes=saved_bytes,
        fwd_tmp_bytes=fwd_tmp_bytes,
        bwd_tmp_bytes=bwd_tmp_bytes,
        param_bytes=param_bytes(module),
        fwd_times_s=tuple(fwd_times),
        bwd_times_s=tuple(bwd_times),
        input_grad_bytes=input_grad_bytes,
        fwd_retained_bytes=fwd.delta_bytes,
        fwd_peak_bytes=fwd.peak_bytes,
        kept_bytes=saved.saved_bytes,
        output_kept=output_kept,
        output=output,
        input_kept=input_kept,
        recompute_times_s=rec.times_s,
        recompute_tmp_bytes=recompute_tmp_bytes,
        draws_random=draws_random,
    )


def _stage_input(x: torch.Tensor, dev: torch.device) -> torch.Tensor:
    """``a_{ℓ-1}`` as the stage's measured runs take it: on ``dev``, detached, and needing a
    gradient when it is floating-point (token ids get none)."""
    x_in = x.to(dev).detach()
    if x_in.is_floating_point() or x_in.is_complex():
        x_in.requires_grad_(True)
    return x_in


def _stage_forward(module: nn.Module, x_in: torch.Tensor,
                   dev: torch.device) -> Callable[[], torch.Tensor]:
    """One forward of the stage with autograd on, as the executor runs it, returning its
    single output tensor; an in-place update of the input is refused by name."""

    def forward() -> torch.Tensor:
        with torch.enable_grad():
            try:
                # Under autocast, as the executor runs it (runner.not_a_leaf).
                result = module(not_a_leaf(x_in) if torch.is_autocast_enabled(dev.type)
                                else x_in)
            except RuntimeError as err:
                if "leaf Variable" in str(err) and "in-place" in str(err):
                    raise ProfileError(
                        "the stage modifies its input in place; a chain stage must keep its "
                        "input a_{ℓ-1} intact (e.g. put an in-place ReLU inside the stage "
                        f"before it, not at its start) ({err})"
                    ) from err
                raise
            return single_tensor(result, what="a chain stage")

    return forward


def time_stage(module: nn.Module, x: torch.Tensor, *,
               device: torch.device | str | None = None) -> tuple[float, float | None]:
    """One more timed forward and one timed backward (on a fresh forward) of a stage that
    :func:`measure_stage` has measured and warmed up; ``None`` for the backward of a stage
    whose output needs no gradient. Buffers, ``.grad`` and the random streams are restored.

    ``profile()`` calls it in rounds over all the stages: a host that stalls the process
    for a second then slows one round of every stage, which the median over the rounds
    drops, where consecutive runs of one stage would all be slowed (issue 20: recorded
    against profiled times off by 25-65x under load, every repeat of one stage inflated
    together)."""
    dev = resolve_device(device, x)
    x_in = _stage_input(x, dev)
    forward = _stage_forward(module, x_in, dev)
    with preserved(module, dev):
        preallocate_grads(module)
        out, fwd_time = timed(forward, dev)
        del out
        out = forward()
        if not out.requires_grad:
            return fwd_time, None
        delta = random_like(out)
        _, bwd_time = timed(partial(torch.autograd.backward, out, delta), dev)
        x_in.grad = None
        return fwd_time, bwd_time
