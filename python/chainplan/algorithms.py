"""The planner's algorithms as the Go registry describes them, and the request check.

The Go side keeps the only list of algorithms (``planner.Entries``: name, family, plan
format, the request fields each reads). This module reads it once through the bindings and
checks a request against it before any work is done, so that a misspelt name or a
bandwidth given to the wrong algorithm fails before a model is profiled or a bandwidth
measured. The messages are the Go planner's, which checks every request again. This module
never imports torch.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from chainplan import _bind
from chainplan.errors import ArgumentTypeError, PlanError

__all__ = ["Algorithm", "algorithms", "check_algorithm"]


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of the Go planner's registry.

    Attributes:
        name: the lower-case name ``plan(algo=...)`` takes.
        family: ``checkpointing``, ``offloading``, ``pipeline``, ``parallel``
            (:func:`chainplan.parallel.advise`, :func:`chainplan.parallel.search3d`) or
            ``simulation`` (the schedules of :func:`chainplan.pipeline.pipesim`).
        format: the plan document it returns (``chainplan.schedule/v1``,
            ``chainplan.schedule/v1+offload``, ``chainplan.pipeline/v1``; a simulation's
            ``chainplan.pipesim/v1``).
        summary: one line of help text.
        needs: the request fields it requires (``bandwidth``).
        takes: the request fields it reads when given (``slots``, ``segments``).
        frontier: whether :func:`chainplan.tradeoff.frontier` supports it.
    """

    name: str
    family: str
    format: str
    summary: str
    needs: tuple[str, ...]
    takes: tuple[str, ...]
    frontier: bool

    def reads(self, field: str) -> bool:
        """Whether the algorithm reads the request field (needs or takes it)."""
        return field in self.needs or field in self.takes

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Algorithm:
        """An entry of ``pybind.Algorithms``."""
        return cls(name=str(doc["name"]), family=str(doc["family"]), format=str(doc["format"]),
                   summary=str(doc["summary"]), needs=tuple(doc["needs"]),
                   takes=tuple(doc["takes"]), frontier=bool(doc["frontier"]))


@functools.cache
def algorithms() -> dict[str, Algorithm]:
    """The registry by name, in the Go table's order (read from the bindings once)."""
    return {a.name: a for a in map(Algorithm.from_json, json.loads(_bind.algorithms()))}


def check_algorithm(algo: str, *, segments: int = 0, bandwidth: bool = False) -> Algorithm:
    """Check a request's algorithm and the fields it depends on, as the Go planner does.

    Args:
        algo: the algorithm's name (lower-case).

    Keyword Args:
        segments: the requested segment count (0: none asked).
        bandwidth: whether a bandwidth is given.

    Returns:
        The algorithm's entry.

    Raises:
        ArgumentTypeError: ``algo`` is not a string.
        PlanError: an unknown name (with a hint when only the case differs), segments for
            an algorithm without them, a bandwidth missing or given where it is not read.
    """
    if not isinstance(algo, str):
        raise ArgumentTypeError(f"algo must be a str such as 'rotor' (got {algo!r} "
                                f"({type(algo).__name__}))")
    table = algorithms()
    entry = table.get(algo)
    if entry is None:
        hint = ""
        if algo.lower() in table:
            hint = f'names are lower-case: did you mean "{algo.lower()}"? '
        raise PlanError(f'unknown algorithm "{algo}" ({hint}want one of {", ".join(table)})')
    if entry.family == "parallel":
        raise PlanError(f'algorithm "{algo}" ranks parallel strategies, not a sequence: use its '
                        f'own entry point (chainplan.{algo}(profile, cluster, ...))')
    if entry.family == "pipeline":
        raise PlanError(f'algorithm "{algo}" plans a pipeline, not a sequence: use its own entry '
                        f'point (chainplan.pipeline.pipeline_plan(profile, gpus=..., memory=..., '
                        f'algo="{algo}"))')
    if entry.family == "simulation":
        raise PlanError(f'"{algo}" is a pipeline schedule the simulator runs, not a sequence: '
                        f'use chainplan.pipeline.pipesim(profile, schedule="{algo}", '
                        f'microbatches=..., stages=...)')
    if segments and not entry.reads("segments"):
        raise PlanError(f'segments apply to {_readers("segments")} only (got algorithm "{algo}")')
    if "bandwidth" in entry.needs and not bandwidth:
        raise PlanError(f'algorithm "{algo}" needs a bandwidth: bytes per second, such as '
                        f'bandwidth="12GB/s", or "auto"')
    if bandwidth and not entry.reads("bandwidth"):
        names = [a.name for a in table.values() if a.reads("bandwidth")]
        raise PlanError(f"a bandwidth applies to {_readers('bandwidth')} only "
                        f'({", ".join(names)}), not to "{algo}"')
    return entry


def _readers(field: str) -> str:
    """The algorithms that read ``field`` for a message: one by name, else their families
    when each reads it throughout, else their names (the Go planner's wording)."""
    table = algorithms().values()
    names = [a.name for a in table if a.reads(field)]
    if len(names) == 1:
        return f"the {names[0]} algorithm"
    families = list(dict.fromkeys(a.family for a in table if a.reads(field)))
    if any(a.family in families and not a.reads(field) for a in table):
        return "the algorithms " + ", ".join(names)
    return "the " + " and ".join(families) + " algorithms"
