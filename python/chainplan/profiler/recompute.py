"""Measuring the recomputation that runs right before a stage's backward (u_R and o_R).

When a stage's first forward kept nothing, the checkpointing executor recomputes it right
before its backward, under :func:`chainplan.runtime.saved.filling`: the forward runs
again from the stage input and stops once autograd has saved the last tensor the backward
reads (``F_all`` immediately followed by ``B`` in a plan; docs/rotor.md, "The exact memory
model"). The chain charges that recomputation, not a whole forward: :func:`measure_recompute`
times exactly what the executor runs (a first forward dropping the saved tensors, then the
timed early-stopping recomputation) and measures its peak above what was in memory before
it (the stage input, the first forward's graph without its tensors).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from chainplan.profiler.measuring import timed
from chainplan.profiler.memory import MemoryProbe
from chainplan.runtime.recompute import frozen_buffers
from chainplan.runtime.saved import (
    StageSaves,
    StopRecomputation,
    buffer_storages,
    dropping,
    filling,
)

__all__ = ["Recomputation", "measure_recompute"]


@dataclass(frozen=True)
class Recomputation:
    """The recomputation of a stage right before its backward.

    Attributes:
        times_s: every timed recomputation (seconds); u_R is their median.
        peak_bytes: its peak above the memory present before it (bytes).
        retained_bytes: what it leaves in memory, the saved tensors back in the graph
            (bytes; an output that nothing saved is not among them).
    """

    times_s: tuple[float, ...]
    peak_bytes: int
    retained_bytes: int

    @property
    def time_s(self) -> float:
        """u_R, the median time (seconds)."""
        return statistics.median(self.times_s)


def _dropped_graph(module: nn.Module, x_in: torch.Tensor) -> StageSaves:
    """A first forward that keeps nothing, as the executor's ``F_ck``: its holders."""
    saves = StageSaves(0, lambda _k: None)
    with torch.enable_grad(), dropping(saves, buffer_storages(module)):
        out = module(x_in)
    del out
    return saves


def _recompute(module: nn.Module, x_in: torch.Tensor, saves: StageSaves) -> None:
    """The executor's early-stopping recomputation (``F_all`` right before ``B``)."""
    try:
        with torch.enable_grad(), frozen_buffers(module), filling(saves, stop=True):
            module(x_in)
    except StopRecomputation:
        pass


def measure_recompute(module: nn.Module, x_in: torch.Tensor, *, repeats: int,
                      dev: torch.device) -> Recomputation:
    """Time the recomputation ``repeats`` times and measure its memory once.

    The caller restores the module's buffers and the RNG streams (``measure_stage`` runs
    this inside its :func:`~chainplan.profiler.measuring.preserved` block).
    """
    saves = _dropped_graph(module, x_in)
    if saves.empty == 0:  # the graph kept all it needs: the executor recomputes nothing
        return Recomputation(times_s=(0.0,) * repeats, peak_bytes=0, retained_bytes=0)
    with MemoryProbe(device=dev) as probe:
        _recompute(module, x_in, saves)  # the holders keep what it saved past the probe
    peak, retained = probe.peak_bytes, probe.delta_bytes
    del saves
    times = []
    for _ in range(repeats):
        saves = _dropped_graph(module, x_in)
        _, elapsed = timed(partial(_recompute, module, x_in, saves), dev)
        times.append(elapsed)
        del saves
    return Recomputation(times_s=tuple(times), peak_bytes=peak, retained_bytes=retained)
