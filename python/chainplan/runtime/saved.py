"""Saved tensors a stage's first forward drops, and the recomputations that bring them back.

The checkpointing executor records one autograd graph per step, as a plain forward does,
and decides with ``torch.autograd.graph.saved_tensors_hooks`` what each stage's graph keeps
(the technique of PyTorch's non-reentrant ``torch.utils.checkpoint``):

* a stage whose graph keeps nothing runs under :func:`dropping`: every tensor autograd
  saves, except the model's parameters (which stay in memory anyway), is replaced in the
  graph by an empty :class:`Holder`;
* a recomputation of the stage runs under :func:`filling`: the stage's forward runs again
  from its input, and the tensors autograd saves this time go into the holders, by their
  order (the same operations save the same tensors in the same order; a different shape or
  dtype, or more tensors than the first time, is an error naming the stage). It may stop
  as soon as the last empty holder is filled (:class:`StopRecomputation`): the operations
  after it compute nothing the backward reads;
* the backward unpacks a holder; an empty one asks its ``need`` callback (the executor) to
  run what the plan puts before the stage's backward, which fills it.

A holder lives as long as the graph node that saved it: autograd frees a node's saved
tensors after running its backward, and the holder's tensor goes with them.

Under ``torch.compile`` the hooks run inside stage calls that Dynamo evaluates; their
frames (and the holder's constructor) are marked skipped
(:func:`chainplan.runtime.compiled.entry`), so Dynamo never traces them: it compiled them
into graphs of their own before, re-guarded on every saved tensor and recompiled per
dtype up to its limit (a stage run eagerly under the callback: a declared stage).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.runtime import compiled

__all__ = ["Holder", "StageSaves", "StopRecomputation", "buffer_storages", "dropping", "filling"]


class StopRecomputation(Exception):  # noqa: N818  (a signal, not an error)
    """Raised from inside a recomputation once every holder it had to fill is filled."""


class Holder:
    """One tensor a stage's graph saved and its first forward dropped.

    Attributes:
        tensor: the tensor once a recomputation brought it back, else None.
        shape, dtype: what the first forward saved, to check the recomputation against.
        saves: the stage's record, which knows how to ask for the recomputation.
    """

    __slots__ = ("tensor", "shape", "dtype", "saves")

    @compiled.entry  # created by the hooks, which Dynamo never traces (module docstring)
    def __init__(self, t: torch.Tensor, saves: StageSaves) -> None:
        self.tensor: torch.Tensor | None = None
        self.shape = t.shape
        self.dtype = t.dtype
        self.saves: StageSaves | None = saves


class StageSaves:
    """The holders of one stage in one step, in the order autograd saved their tensors.

    Args:
        stage: the stage index (1-based), for errors.
        need: called with the stage index when the backward unpacks an empty holder; it
            runs what fills it.
    """

    def __init__(self, stage: int, need: Callable[[int], None]) -> None:
        self.stage = stage
        self.need: Callable[[int], None] | None = need
        self.holders: list[Holder | None] = []  # None where the graph kept the tensor itself
        self.empty = 0  # holders still to fill
        # What an operation-level option kept, by pack index, for its recomputation to
        # rebuild the kept values from (chainplan.graph.partial).
        self.kept: dict[int, torch.Tensor] = {}

    def close(self) -> None:
        """Forget the holders and kept tensors (the graph keeps them): called once all
        holders are filled."""
        self.holders = []
        self.kept = {}
        self.need = None


@compiled.entry
def _is_parameter(t: torch.Tensor) -> bool:
    """Whether ``t`` is a parameter or a view of one (``weight.t()``): it stays in memory
    whatever the graph keeps, so dropping it would only cost a recomputation."""
    if isinstance(t, nn.Parameter):
        return True
    base = t._base
    return base is not None and isinstance(base, nn.Parameter)


def buffer_storages(stage: nn.Module) -> frozenset[int]:
    """The storages of the stage's buffers (BatchNorm's running statistics): they too stay
    in memory whatever the graph keeps."""
    return frozenset(b.untyped_storage().data_ptr() for b in stage.buffers())


def dropping(saves: StageSaves, keep: frozenset[int] = frozenset(),
             mask: Sequence[bool] | None = None) -> torch.autograd.graph.saved_tensors_hooks:
    """Hooks under which the stage's graph keeps nothing but parameters and the storages in
    ``keep`` (its buffers: :func:`buffer_storages`) (module docstring), and, with ``mask``
    (an operation-level option's, by the order of the saved tensors), what it marks; those
    are also recorded in ``saves.kept``."""

    @compiled.entry
    def pack(t: torch.Tensor) -> Any:
        i = len(saves.holders)
        if mask is not None:
            if i >= len(mask):
                raise ScheduleError(
                    f"stage {saves.stage} saved more tensors than when its options were "
                    f"computed ({len(mask)}): profile and plan again for this input")
            if mask[i]:
                saves.holders.append(None)
                kept = t.detach()
                saves.kept[i] = kept
                return kept
        if _is_parameter(t) or (keep and t.untyped_storage().data_ptr() in keep):
            saves.holders.append(None)
            return t
        h = Holder(t, saves)
        saves.holders.append(h)
        saves.empty += 1
        return h

    return torch.autograd.graph.saved_tensors_hooks(pack, _unpack)


@compiled.entry
def _unpack(packed: Any) -> Any:
    if type(packed) is not Holder:
        return packed
    if packed.tensor is None:
        saves = packed.saves
        if saves is not None and saves.need is not None:
            saves.need(saves.stage)
        if packed.tensor is None:
            where = f"stage {saves.stage}" if saves is not None else "a stage"
            raise ScheduleError(f"the backward of {where} reads a saved tensor that no "
                                "recomputation brought back (a chainplan step cannot be "
                                "backpropagated twice)")
    return packed.tensor


_DROPPED = object()


@compiled.entry
def refill(saves: StageSaves, i: int, t: torch.Tensor) -> torch.Tensor | None:
    """Put a recomputation's ``t`` into the stage's saved tensor ``i`` if its holder is
    empty; what it now holds, or None where it filled nothing. The one check that a
    recomputation rebuilt what the first forward saved (the stage-wise hooks here and the
    partial recomputation of an operation-level option, :mod:`chainplan.graph.partial`)."""
    h = saves.holders[i] if i < len(saves.holders) else None
    if h is None or h.tensor is not None:
        return None
    if t.shape != h.shape or t.dtype != h.dtype:
        raise ScheduleError(
            f"the recomputation of stage {saves.stage} saved a {t.dtype} tensor of shape "
            f"{tuple(t.shape)} where its first forward saved {h.dtype} {tuple(h.shape)} "
            f"(saved tensor {i}): the stage does not compute the same values twice")
    h.tensor = t.detach()
    h.saves = None
    saves.empty -= 1
    return h.tensor


def filling(saves: StageSaves, *, stop: bool,
            only: Sequence[bool] | None = None) -> torch.autograd.graph.saved_tensors_hooks:
    """Hooks under which a recomputation of the stage fills its empty holders, in order; with
    ``stop`` it raises :class:`StopRecomputation` once the last one is filled. With ``only``
    (an operation-level option's mask) it fills the marked holders alone and records them
    in ``saves.kept``. The recomputation's own graph keeps nothing."""
    counter = [0]
    holders = saves.holders

    @compiled.entry
    def pack(t: torch.Tensor) -> Any:
        i = counter[0]
        counter[0] = i + 1
        if i >= len(holders):
            raise ScheduleError(
                f"the recomputation of stage {saves.stage} saved more tensors than its first "
                f"forward ({len(holders)}): the stage does not compute the same operations "
                "twice (data-dependent control flow?)")
        if only is not None and not (i < len(only) and only[i]):
            return _DROPPED
        filled = refill(saves, i, t)
        if filled is not None:
            if only is not None:
                saves.kept[i] = filled
            if stop and saves.empty == 0:
                raise StopRecomputation
        return _DROPPED

    return torch.autograd.graph.saved_tensors_hooks(pack, _unpack)
