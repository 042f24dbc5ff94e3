"""Moved to :mod:`chainplan.runtime.side`, below the executors (docs/ARCHITECTURE.md,
"Python layers"); this path is kept so that imports written against it still work."""

from __future__ import annotations

from chainplan.runtime.side import SideInputs, SideSlot

__all__ = ["SideInputs", "SideSlot"]
