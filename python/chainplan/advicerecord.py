"""Measured runs recorded against stored advice, and their accuracy (spec §5.5).

:class:`StoredResult` is what :class:`~chainplan.advice.Advice` and
:class:`~chainplan.advice.Search3D` share: a result of a stored profile knows its
``advice_id``, records what a candidate measured when it ran, and compares the recorded runs
with its predictions. :func:`record_measured` does the same for a launcher that knows only
the advice's id (``examples/parallel/train.py``: every rank's peak, no typing). This module
never imports torch.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from chainplan import _bind
from chainplan.errors import PlanError
from chainplan.jsonfields import Fields


class _Candidate(Protocol):
    """A candidate of a stored result (:class:`~chainplan.advice.StrategyEstimate`,
    :class:`~chainplan.advice.Candidate3D`; chainplan.advice imports this module): its
    index in the result's list."""

    @property
    def index(self) -> int: ...

__all__ = ["StoredResult", "Accuracy", "MeasuredCandidate", "record_measured"]


def record_measured(db: str | None, advice_id: int, candidate_index: int, iteration_s: float,
                    peaks_bytes_per_rank: Sequence[int] = (), *, iterations: int = 1,
                    out_of_memory: bool = False, metadata: Mapping[str, str] | None = None) -> int:
    """Store what a launched candidate measured into stored advice; returns the
    measurement's id. ``chainplan advice record`` with ``--rank-peaks`` does the same.

    Args:
        db: the database (a SQLite path or a PostgreSQL DSN); None: ``$CHAINPLAN_DB`` or
            the default, as every other call.
        advice_id: the stored advice (``Search3D.advice_id``, ``Advice.advice_id``).
        candidate_index: the candidate's index in the advice's list (−1: search3d's
            Megatron pick).
        iteration_s: mean time of one iteration, the first left out (seconds).
        peaks_bytes_per_rank: every rank's measured peak, in rank order (empty: not
            measured); the largest is the run's peak, the list is kept in the
            measurement's metadata (``peak_bytes_per_rank``).

    Keyword Args:
        iterations: iterations ``iteration_s`` is the mean of.
        out_of_memory: the run ran out of memory.
        metadata: strings kept with the measurement (the launcher's command, the mesh).

    Raises:
        PlanError: an advice id below 1; the store's refusals (an unknown advice or
            candidate, a negative peak, a time that is not positive) as their errors.
    """
    if advice_id < 1:
        raise PlanError(f"advice_id must be a stored advice's id (≥ 1), got {advice_id}")
    return _bind.record_advice_measurement(advice_id, {
        "candidate": candidate_index, "iterations": iterations, "iteration_time_s": iteration_s,
        "peak_bytes_per_rank": [int(p) for p in peaks_bytes_per_rank],
        "out_of_memory": out_of_memory, "host": socket.gethostname(),
        "metadata": dict(metadata or {})}, db or "")


class StoredResult:
    """What a stored result does: record measured runs of its candidates and compare."""

    advice_id: int

    def record(self, candidate: _Candidate | int, *,
               iteration_time_s: float, iterations: int = 1, peak_bytes: int = 0,
               out_of_memory: bool = False) -> int:
        """Store what a candidate measured when it ran; returns the measurement's id.

        Args:
            candidate: the candidate, or its index in :attr:`candidates`.

        Keyword Args:
            iteration_time_s: mean time of one iteration, the first left out (seconds).
            iterations: iterations it is the mean of (default: 1).
            peak_bytes: the measured peak memory of a device (0: not measured).
            out_of_memory: the run ran out of memory.
        """
        if self.advice_id <= 0:
            raise PlanError("this result is not stored (advise and search3d store the results "
                            "of stored profiles only): nothing to record against")
        index = candidate if isinstance(candidate, int) else candidate.index
        return _bind.record_advice_measurement(self.advice_id, {
            "candidate": index, "iterations": iterations, "iteration_time_s": iteration_time_s,
            "peak_bytes": peak_bytes, "out_of_memory": out_of_memory,
            "host": socket.gethostname()})

    def accuracy(self) -> Accuracy:
        """Predictions against the recorded runs (spec §5.5): ParaDL's accuracy per
        candidate, Spearman's ρ, the predicted rank of the measured best."""
        if self.advice_id <= 0:
            raise PlanError("this result is not stored: no runs were recorded against it")
        return _accuracy(self.advice_id)


@dataclass(frozen=True)
class MeasuredCandidate:
    """A measured candidate: its prediction, the mean of its runs, ParaDL's accuracy."""

    candidate: int
    rank: int
    strategy: str
    devices: int
    predicted_iteration_time_s: float
    measured_iteration_time_s: float
    runs: int
    out_of_memory_runs: int
    accuracy: float | None


@dataclass(frozen=True)
class Accuracy:
    """How an advice's predictions compare with its recorded runs (spec §5.5)."""

    mean_accuracy: float
    spearman: float | None
    measured_best_rank: int
    out_of_memory: int
    candidates: tuple[MeasuredCandidate, ...]


def _accuracy(advice_id: int) -> Accuracy:
    doc = json.loads(_bind.advice_accuracy(advice_id))
    f = Fields(doc)
    rows = tuple(MeasuredCandidate(
        candidate=c.integer("candidate"), rank=c.integer("rank"), strategy=c.string("strategy"),
        devices=c.integer("devices"),
        predicted_iteration_time_s=c.number("predicted_iteration_time_s"),
        measured_iteration_time_s=c.number("measured_iteration_time_s"), runs=c.integer("runs"),
        out_of_memory_runs=c.integer("out_of_memory_runs"),
        accuracy=c.number("accuracy") if c.has("accuracy") else None)
        for c in f.objects("candidates"))
    return Accuracy(mean_accuracy=f.number("mean_accuracy"),
                    spearman=f.number("spearman") if f.has("spearman") else None,
                    measured_best_rank=f.integer("measured_best_rank"),
                    out_of_memory=f.integer("out_of_memory"), candidates=rows)
