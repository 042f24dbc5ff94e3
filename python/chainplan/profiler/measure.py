"""Deprecated path of :mod:`chainplan.profiler.stagemeasure` (measuring one chain stage).

Renamed so that it no longer reads like :mod:`chainplan.profiler.measuring` (what measuring
a stage and the loss share); it pairs with :mod:`chainplan.profiler.lossmeasure`. Importing
this module warns with the new path.
"""

from __future__ import annotations

from chainplan._moved import warn_moved
from chainplan.profiler.stagemeasure import StageMeasurement, measure_stage, time_stage

__all__ = ["StageMeasurement", "measure_stage", "time_stage"]

warn_moved(__name__, "chainplan.profiler.stagemeasure")
