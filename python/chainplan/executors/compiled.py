"""Moved to :mod:`chainplan.runtime.compiled`, below the executors (docs/ARCHITECTURE.md,
"Python layers"); this path is kept so that imports written against it still work."""

from __future__ import annotations

from chainplan.runtime.compiled import current, eager, entry, stage_call

__all__ = ["current", "eager", "entry", "stage_call"]
