"""Moved to :mod:`chainplan.executors.towersplan`, beside the other executors
(docs/ARCHITECTURE.md, "Python layers"); this path is kept so that imports written against
it still work."""

from __future__ import annotations

from chainplan.executors.towersplan import TowersPlan

__all__ = ["TowersPlan"]
