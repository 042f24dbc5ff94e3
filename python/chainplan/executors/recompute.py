"""Moved to :mod:`chainplan.runtime.recompute`, below the executors (docs/ARCHITECTURE.md,
"Python layers"); this path is kept so that imports written against it still work."""

from __future__ import annotations

from chainplan.runtime.recompute import AutocastState, RNGState, frozen_buffers, not_a_leaf

__all__ = ["AutocastState", "RNGState", "frozen_buffers", "not_a_leaf"]
