"""Deprecated path of :mod:`chainplan.pipeline.requests` (``pipeline_plan``, ``load_plan``).

Renamed so that it no longer reads like :mod:`chainplan.pipeline.plan` (the plan itself):
importing this module warns with the new path.
"""

from __future__ import annotations

from chainplan._moved import warn_moved
from chainplan.pipeline.requests import load_plan, pipeline_plan

__all__ = ["load_plan", "pipeline_plan"]

warn_moved(__name__, "chainplan.pipeline.requests")
