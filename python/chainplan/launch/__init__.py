"""Launching a plan on several processes: :func:`chainplan.parallelize` and the
:class:`~chainplan.launch.candidate.LaunchCandidate` it builds (docs/distributed.md).

Names are imported on first use, so that reading a candidate does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainplan._lazy import lazy_names

if TYPE_CHECKING:
    from chainplan.launch.build import parallelize
    from chainplan.launch.candidate import LaunchCandidate
    from chainplan.launch.run import Parallelized

__all__ = ["LaunchCandidate", "Parallelized", "parallelize"]

_WHERE = {
    "LaunchCandidate": "chainplan.launch.candidate",
    "Parallelized": "chainplan.launch.run",
    "parallelize": "chainplan.launch.build",
}

__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
