"""Moved to :mod:`chainplan.runtime.saved`, below the executors (docs/ARCHITECTURE.md,
"Python layers"); this path is kept so that imports written against it still work."""

from __future__ import annotations

from chainplan.runtime.saved import (
    Holder,
    StageSaves,
    StopRecomputation,
    buffer_storages,
    dropping,
    filling,
)

__all__ = ["Holder", "StageSaves", "StopRecomputation", "buffer_storages", "dropping", "filling"]
