"""Counting the bytes autograd saves for the backward pass.

:class:`SavedTensorProbe` installs ``torch.autograd.graph.saved_tensors_hooks`` over a region
and records every tensor that autograd packs for a later backward. It counts each storage once
(keyed by device and storage data pointer, so views and in-place results of one buffer count
once) and counts the whole storage, which is the memory the saved tensor really keeps alive.
Parameters and buffers of a given module, and any tensor passed in ``exclude`` (typically the
stage input ``a_{ℓ-1}``), are left out: the rotor model keeps them outside ``ā_ℓ``
(``specs/rotor.md`` §1.2).

This is the "what F_all keeps for B" part of ``ā_ℓ``; it does not include the stage output
unless an operation saved it. It does not see tensors that a custom
``torch.autograd.Function`` stores as plain ``ctx`` attributes instead of with
``ctx.save_for_backward``, nor tensors kept alive by Python references outside autograd.

Usage::

    with SavedTensorProbe(module=stage, exclude=[x]) as saved:
        y = stage(x)
    print(saved.saved_bytes, saved.saved_count, saved.is_saved(y))
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import Any

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.sizes import local, storage_nbytes

__all__ = ["SavedTensorProbe"]

# A storage is identified by its device and the address of its data.
_StorageKey = tuple[str, int, int]


def _storage_key(t: torch.Tensor) -> _StorageKey | None:
    """Returns the key of the storage under ``t``, or None when it has none (sparse, 0 bytes)."""
    t = local(t)  # a DTensor's shard: its own storage is a placeholder
    try:
        storage = t.untyped_storage()
    except (NotImplementedError, RuntimeError):
        return None
    ptr = int(storage.data_ptr())
    if ptr == 0:
        return None
    index = t.device.index if t.device.index is not None else -1
    return (t.device.type, index, ptr)


class SavedTensorProbe:
    """Measures what autograd saves for backward in a region: unique storages and their bytes.

    Keyword Args:
        module: a module whose parameters and buffers are not counted (default: None).
        exclude: more tensors whose storages are not counted, e.g. the stage input
            (default: none).

    Raises:
        ProfileError: the probe is entered twice, or a result is read before the region exits.

    Example::

        with SavedTensorProbe(module=layer, exclude=[x]) as saved:
            y = layer(x)
        abar_bytes = saved.saved_bytes + (0 if saved.is_saved(y) else y.nbytes)

    .. note::
        Count one forward per probe: if a graph recorded inside the region is freed inside it,
        a later storage can reuse a freed address and be counted as the same storage.
    """

    def __init__(
        self, *, module: nn.Module | None = None, exclude: Iterable[torch.Tensor] = ()
    ) -> None:
        excluded: set[_StorageKey] = set()
        tensors: list[torch.Tensor] = list(exclude)
        if module is not None:
            tensors.extend(module.parameters())
            tensors.extend(module.buffers())
        for t in tensors:
            key = _storage_key(t)
            if key is not None:
                excluded.add(key)
        self._excluded = frozenset(excluded)
        self._saved: dict[_StorageKey, int] = {}
        self._packed_keys: set[_StorageKey] = set()  # every packed storage, excluded ones too
        self._packed = 0
        self._hooks: Any = None
        self._state = "new"

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        self._packed += 1
        key = _storage_key(t)
        if key is not None:
            self._packed_keys.add(key)
        if key is not None and key not in self._excluded:
            nbytes = storage_nbytes(t)
            # A storage may have grown (resize_) between two saves; keep the largest size.
            if nbytes > self._saved.get(key, -1):
                self._saved[key] = nbytes
        return t

    @staticmethod
    def _unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    def __enter__(self) -> SavedTensorProbe:
        if self._state != "new":
            raise ProfileError("a SavedTensorProbe is single-use; create a new one per region")
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        self._state = "open"
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._hooks.__exit__(exc_type, exc, tb)
        self._hooks = None
        self._state = "closed"

    def _check_closed(self) -> None:
        if self._state != "closed":
            raise ProfileError("saved-tensor results are available after the region exits")

    @property
    def saved_bytes(self) -> int:
        """Bytes of the unique storages saved for backward, exclusions left out (bytes)."""
        self._check_closed()
        return sum(self._saved.values())

    @property
    def saved_count(self) -> int:
        """Number of unique storages saved for backward, exclusions left out."""
        self._check_closed()
        return len(self._saved)

    @property
    def packed_count(self) -> int:
        """Number of tensors autograd packed, duplicates and excluded tensors included."""
        self._check_closed()
        return self._packed

    def is_saved(self, t: torch.Tensor) -> bool:
        """Tells whether the storage under ``t`` was saved for backward (and not excluded).

        Args:
            t: any tensor, typically the region's output.

        Returns:
            True when some saved tensor shares ``t``'s storage.
        """
        self._check_closed()
        key = _storage_key(t)
        return key is not None and key in self._saved

    def is_packed(self, t: torch.Tensor) -> bool:
        """Tells whether autograd saved ``t``'s storage, excluded tensors included.

        :meth:`is_saved` answers for the counted storages only; this one also sees an
        excluded input that the region's backward keeps (a loss that saves its input).

        Args:
            t: any tensor, typically one passed in ``exclude``.
        """
        self._check_closed()
        key = _storage_key(t)
        return key is not None and key in self._packed_keys
