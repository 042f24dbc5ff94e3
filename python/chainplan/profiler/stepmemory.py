"""The memory side of ``chainplan.record``: one training step measured stage by stage.

:func:`chainplan.profile` measures each stage in isolation (``measure.py``); ``record``
watches the user's own training step, so it measures the same quantities from inside it,
with the same probes, at the moments its hooks see:

* forward of stage ``k`` (pre-hook to forward hook): a
  :class:`~chainplan.profiler.saved.SavedTensorProbe` (the stage's parameters and its
  input left out) gives ``ā_k``, exactly as ``measure_stage`` counts it, and a
  :class:`~chainplan.profiler.memory.MemoryProbe` the forward's peak, hence ``o_F``;
* backward of stage ``k`` (the hook on its output's gradient ``δ_k`` to the hook on its
  input's gradient ``δ_{k-1}``): a MemoryProbe whose peak, less ``δ_{k-1}``, is ``o_B``
  (``δ_k`` already exists when the probe opens, where ``measure_stage`` creates it inside
  its probe and subtracts it);
* the loss, when ``record`` was given it: its forward under both probes, its backward from
  the hook on the loss value to the hook on ``δ_L``.

CUDA probes read the caching allocator's counters and cost nothing; CPU probes replay the
allocator's events through PyTorch's profiler, about 10 µs per operator, which is why only
one step is measured this way and the others are timed. One outer probe spans the step, so
the CPU probe sees the backward free what the forward saved (memory.py).

Weight gradients are not activations (``specs/rotor.md`` §7 item 20): for the measured step,
parameters whose ``.grad`` is None get a zero gradient first, as ``measure_stage`` does, so
the backward accumulates into it instead of allocating it; parameters that received no
gradient in the step get ``None`` back afterwards, so an optimizer skips them as it would
have. For the others the sum ``0 + g`` is ``g``: training is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.profiler.sizes import shares_storage, storage_nbytes

__all__: list[str] = []


@dataclass(frozen=True)
class StageMemory:
    """One stage's memory columns from a training step (bytes; see ``StageMeasurement``)."""

    out_bytes: int
    saved_bytes: int
    kept_bytes: int
    output_kept: bool
    fwd_tmp_bytes: int
    fwd_peak_bytes: int
    fwd_retained_bytes: int
    bwd_tmp_bytes: int
    input_grad_bytes: int


@dataclass(frozen=True)
class LossMemory:
    """The loss's memory columns from a training step (bytes; see ``LossMeasurement``)."""

    fwd_tmp_bytes: int
    bwd_tmp_bytes: int
    grad_bytes: int
    saved_bytes: int
    input_kept: bool
    held_bytes: int


@dataclass
class _Forward:
    saved: SavedTensorProbe
    probe: MemoryProbe
    out_bytes: int = 0
    kept_bytes: int = 0
    output_kept: bool = False
    input_kept: bool = False  # the loss only: its backward needs a_L


class StepMemory:
    """Measures the memory of one training step, stage by stage (see the module doc).

    The recorder calls the ``*_begin``/``*_end`` methods from its hooks in step order,
    :meth:`finish` when the backward is over and :meth:`close` after it (at the next step or
    at the end of the recording); :meth:`stages` and :meth:`loss` then give the results.
    :meth:`abort` closes whatever is open, for a step that never finished.

    Args:
        device: the device the model trains on.
        stages: the chain's stages, in order.
        loss_module: the loss, when it is a module (its parameters and buffers are not
            counted as saved), else None.
    """

    def __init__(self, device: torch.device, stages: list[nn.Module],
                 loss_module: nn.Module | None) -> None:
        self._device = device
        self._stages = stages
        self._loss_module = loss_module
        self._outer = MemoryProbe(device=device)
        self._open: list[Any] = []  # entered context managers, innermost last
        self._fwd: dict[int, _Forward] = {}
        self._bwd: dict[int, tuple[MemoryProbe, int]] = {}
        self._bwd_open: dict[int, MemoryProbe] = {}
        self._loss_fwd: _Forward | None = None
        self._loss_bwd: tuple[MemoryProbe, int] | None = None
        self._loss_bwd_open: MemoryProbe | None = None
        self._zeroed: list[nn.Parameter] = []
        self._got_grad: set[int] = set()
        self._grad_hooks: list[Any] = []
        self.finished = False

    # The step --------------------------------------------------------------------------

    def start(self) -> None:
        """Allocate missing weight gradients, then open the step's outer probe."""
        params = {id(p): p for st in self._stages for p in st.parameters() if p.requires_grad}
        for p in params.values():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
                self._zeroed.append(p)
                self._grad_hooks.append(p.register_post_accumulate_grad_hook(  # type: ignore[no-untyped-call]
                    lambda q: self._got_grad.add(id(q))))
        self._enter(self._outer)

    def finish(self) -> None:
        """End the step (from the end-of-backward callback): restore ``None`` grads.

        The outer probe stays open until :meth:`close`: the autograd engine runs the
        backward under the thread-local state it captured when ``backward()`` began (the
        CPU profiler on), and puts that state back when it returns, so a profiler stopped
        inside the backward would be running again after it.
        """
        self._restore_grads()
        self.finished = True

    def close(self) -> None:
        """Close the outer probe, outside any backward; the results become readable."""
        if self._outer in self._open:
            self._exit(self._outer)

    def abort(self) -> None:
        """Close every open probe, innermost first; the step's results are discarded."""
        while self._open:
            self._open.pop().__exit__(None, None, None)
        self._restore_grads()

    def _restore_grads(self) -> None:
        for h in self._grad_hooks:
            h.remove()
        for p in self._zeroed:
            if id(p) not in self._got_grad:
                p.grad = None
        self._grad_hooks, self._zeroed = [], []

    def _enter(self, cm: Any) -> None:
        cm.__enter__()
        self._open.append(cm)

    def _exit(self, cm: Any) -> None:
        self._open.remove(cm)
        cm.__exit__(None, None, None)

    # Stages ----------------------------------------------------------------------------

    def fwd_begin(self, k: int, x: torch.Tensor | None) -> None:
        saved = SavedTensorProbe(module=self._stages[k - 1],
                                 exclude=[x] if isinstance(x, torch.Tensor) else [])
        f = _Forward(saved, MemoryProbe(device=self._device))
        self._enter(f.saved)
        self._enter(f.probe)
        self._fwd[k] = f

    def fwd_end(self, k: int, x: torch.Tensor | None, out: torch.Tensor) -> None:
        f = self._fwd[k]
        self._exit(f.probe)
        self._exit(f.saved)
        # As measure_stage: what autograd saved, plus the output unless an operation saved
        # it or it aliases the input.
        f.out_bytes = storage_nbytes(out)  # a view holds its base (profiler.sizes)
        f.output_kept = f.saved.is_saved(out) or (
            isinstance(x, torch.Tensor) and shares_storage(out, x))
        f.kept_bytes = f.saved.saved_bytes
        if not f.output_kept:
            f.kept_bytes += storage_nbytes(out)

    def bwd_begin(self, k: int) -> None:
        probe = MemoryProbe(device=self._device)
        self._enter(probe)
        self._bwd_open[k] = probe

    def bwd_end(self, k: int, input_grad_bytes: int) -> None:
        probe = self._bwd_open.pop(k, None)
        if probe is not None:
            self._exit(probe)
            self._bwd[k] = (probe, input_grad_bytes)

    # The loss --------------------------------------------------------------------------

    def loss_fwd_begin(self, tensors: Iterable[torch.Tensor]) -> None:
        f = _Forward(SavedTensorProbe(module=self._loss_module, exclude=list(tensors)),
                     MemoryProbe(device=self._device))
        self._enter(f.saved)
        self._enter(f.probe)
        self._loss_fwd = f

    def loss_fwd_end(self, a_last: torch.Tensor | None, loss: torch.Tensor) -> None:
        f = self._loss_fwd
        if f is None:
            return
        self._exit(f.probe)
        self._exit(f.saved)
        f.kept_bytes = f.saved.saved_bytes
        if not f.saved.is_saved(loss):
            f.kept_bytes += storage_nbytes(loss)
        f.input_kept = isinstance(a_last, torch.Tensor) and f.saved.is_packed(a_last)

    def loss_bwd_begin(self) -> None:
        self._loss_bwd_open = MemoryProbe(device=self._device)
        self._enter(self._loss_bwd_open)

    def loss_bwd_end(self, grad_bytes: int) -> None:
        if self._loss_bwd_open is not None:
            self._exit(self._loss_bwd_open)
            self._loss_bwd = (self._loss_bwd_open, grad_bytes)
            self._loss_bwd_open = None

    # Results ---------------------------------------------------------------------------

    def complete(self, with_loss: bool) -> bool:
        """Whether every stage (and the loss, when expected) was measured both ways."""
        n = len(self._stages)
        stages_done = all(k in self._fwd and k in self._bwd for k in range(1, n + 1))
        return self.finished and stages_done and (
            not with_loss or (self._loss_fwd is not None and self._loss_bwd is not None))

    def stages(self) -> list[StageMemory]:
        """Per stage, the memory columns ``measure_stage`` would give (after close)."""
        out = []
        for k in range(1, len(self._stages) + 1):
            f = self._fwd[k]
            bwd, grad_in = self._bwd[k]
            saved = max(f.kept_bytes, f.out_bytes)
            out.append(StageMemory(
                out_bytes=f.out_bytes, saved_bytes=saved, kept_bytes=f.saved.saved_bytes,
                output_kept=f.output_kept, fwd_tmp_bytes=max(0, f.probe.peak_bytes - saved),
                fwd_peak_bytes=f.probe.peak_bytes, fwd_retained_bytes=f.probe.delta_bytes,
                bwd_tmp_bytes=max(0, bwd.peak_bytes - grad_in), input_grad_bytes=grad_in))
        return out

    def loss(self) -> LossMemory | None:
        """The loss's memory columns ``measure_loss`` would give, None when not measured."""
        if self._loss_fwd is None or self._loss_bwd is None:
            return None
        f = self._loss_fwd
        bwd, grad = self._loss_bwd
        return LossMemory(
            fwd_tmp_bytes=f.probe.peak_bytes,
            bwd_tmp_bytes=max(0, f.kept_bytes + bwd.peak_bytes - grad), grad_bytes=grad,
            saved_bytes=f.kept_bytes, input_kept=f.input_kept,
            held_bytes=max(0, f.probe.delta_bytes + bwd.delta_bytes - grad))
