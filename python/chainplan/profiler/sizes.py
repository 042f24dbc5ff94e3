"""Byte sizes of tensors as the profiler counts them: the data a tensor shows, the storage
it holds, and whether two tensors hold the same storage.

A tensor keeps its whole storage alive, not just the elements it shows: the slice
``h[:, :-1]`` of a ``(B, T, D)`` tensor holds all ``B·T·D`` elements. What a stage returns
or saves is therefore counted by storage (:func:`storage_nbytes`, each storage once:
:func:`held_nbytes`), and the next stage is measured on an input with the layout it gets
at run time (:func:`layout_copy`): a non-contiguous input costs the operations that copy
it (a ``reshape``), which a contiguous clone would hide (issue 35).

A DTensor (a tensor-parallel layer's parameters, its gradients, what autograd saves around
them) counts as the part this process holds, its local shard (:func:`local`): its own
sizes are the global tensor's and its storage a placeholder without data."""

from __future__ import annotations

from collections.abc import Iterable

import torch

__all__ = ["held_nbytes", "layout_copy", "local", "nbytes", "shares_storage",
           "storage_nbytes"]


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of ``t`` this process holds: a DTensor's local shard (module docstring),
    any other tensor itself."""
    return t.to_local() if hasattr(t, "to_local") else t  # without importing DTensor


def nbytes(t: torch.Tensor) -> int:
    """The bytes of ``t``'s elements (a view counts its own elements, not its storage)."""
    t = local(t)
    return int(t.numel() * t.element_size())


def storage_nbytes(t: torch.Tensor) -> int:
    """The bytes of the storage ``t`` holds alive (its elements' bytes for tensors without
    a storage, such as tensor subclasses)."""
    t = local(t)
    try:
        return int(t.untyped_storage().nbytes())
    except (NotImplementedError, RuntimeError):
        return nbytes(t)


def _storage_id(t: torch.Tensor) -> tuple[str, int, int] | None:
    """The device and data address of ``t``'s storage; None without one (or empty)."""
    t = local(t)
    try:
        ptr = int(t.untyped_storage().data_ptr())
    except (NotImplementedError, RuntimeError):
        return None
    if ptr == 0:
        return None
    return (t.device.type, -1 if t.device.index is None else t.device.index, ptr)


def held_nbytes(tensors: Iterable[torch.Tensor]) -> int:
    """The bytes ``tensors`` hold alive together: each storage once, whole (two views of
    one tensor count it once; a tensor without a storage counts its elements)."""
    seen: set[tuple[str, int, int]] = set()
    total = 0
    for t in tensors:
        key = _storage_id(t)
        if key is None:
            total += nbytes(t)
        elif key not in seen:
            seen.add(key)
            total += storage_nbytes(t)
    return total


def layout_copy(t: torch.Tensor) -> torch.Tensor:
    """A detached copy of ``t`` laid out as ``t`` is: a storage of the same size holding
    the same bytes, viewed at ``t``'s offset, shape and strides. ``t.clone()`` would make a
    non-contiguous view contiguous (and its storage smaller): the stage reading it would
    then be measured on another input than the one it runs on. Tensors without a plain
    storage (subclasses) are cloned."""
    with torch.no_grad():
        try:
            src = t.untyped_storage()
        except (NotImplementedError, RuntimeError):
            return t.detach().clone()
        if t.is_contiguous() and t.storage_offset() == 0 and src.nbytes() == nbytes(t):
            return t.detach().clone()
        data = torch.empty(src.nbytes(), dtype=torch.uint8, device=t.device)
        data.untyped_storage().copy_(src)
        out = torch.empty(0, dtype=t.dtype, device=t.device)
        out.set_(data.untyped_storage(), t.storage_offset(), t.shape, t.stride())
        return out


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` hold the same (non-empty) storage."""
    a, b = local(a), local(b)
    try:
        ptr = a.untyped_storage().data_ptr()
        return ptr != 0 and ptr == b.untyped_storage().data_ptr()
    except (NotImplementedError, RuntimeError):
        return False
