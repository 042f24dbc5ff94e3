"""Byte sizes of tensors as the profiler counts them: the data a tensor shows, the storage
it holds, and whether two tensors hold the same storage."""

from __future__ import annotations

import torch

__all__ = ["nbytes", "shares_storage", "storage_nbytes"]


def nbytes(t: torch.Tensor) -> int:
    """The bytes of ``t``'s elements (a view counts its own elements, not its storage)."""
    return int(t.numel() * t.element_size())


def storage_nbytes(t: torch.Tensor) -> int:
    """The bytes of the storage ``t`` holds alive (its elements' bytes for tensors without
    a storage, such as tensor subclasses)."""
    try:
        return int(t.untyped_storage().nbytes())
    except (NotImplementedError, RuntimeError):
        return nbytes(t)


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` hold the same (non-empty) storage."""
    try:
        ptr = a.untyped_storage().data_ptr()
        return ptr != 0 and ptr == b.untyped_storage().data_ptr()
    except (NotImplementedError, RuntimeError):
        return False
