"""Moved to :mod:`chainplan.executors.graphplan`, beside the other executors
(docs/ARCHITECTURE.md, "Python layers"); this path is kept so that imports written against
it still work."""

from __future__ import annotations

from chainplan.executors.graphplan import GraphPlan, run_extracted

__all__ = ["GraphPlan", "run_extracted"]
