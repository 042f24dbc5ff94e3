"""How far a profile's repeated time measurements spread, and the warning when too far.

A stage's time is the median of its repetitions (``profile()``) or of the recorded training
steps (``record()``). The median resists one slow repetition, but when the host is busy
(other processes, thermal throttling, a laptop on battery) every repetition is perturbed
differently and the median is a guess. The spread says how much to trust it.

**Measure.** The spread of one stage in one direction is the range over the median,
``(max − min) / median`` of its repeated times; a stage's spread is the larger of its forward
and backward spreads. The range is chosen over the interquartile range because profiles have
few repetitions (5 by default, often 3): with so few samples the quartiles are
interpolations of the extremes anyway, and the range reads directly as "the slowest
repetition took X % longer than the fastest, relative to the typical one". A profile taken
on a quiet machine has spreads of a few percent on stages of a millisecond or more.

**Warning.** :func:`warn_if_spread` issues one :class:`~chainplan.errors.ChainplanWarning`
naming the worst stages when a stage's spread exceeds the threshold (default 0.25). Stages
too small to matter are left out of the warning, though not out of :func:`stage_spreads`:
those under 1 % of the chain's total median time (they cannot change a plan much), and
those whose median forward + backward time is under 100 µs, where timer resolution, Python
hook overhead and the scheduler's wake-up latency alone spread times by tens of percent.
"""

from __future__ import annotations

import statistics
import warnings
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from chainplan.errors import ChainplanWarning
from chainplan.profilerow import ProfileRow

__all__ = ["DEFAULT_SPREAD_WARNING", "StageSpread", "stage_spreads", "warn_if_spread"]

#: The default threshold of ``profile(spread_warning=...)`` and ``record(spread_warning=...)``.
DEFAULT_SPREAD_WARNING = 0.25

# Stages below either floor are not named in the warning (see the module documentation).
_MIN_SHARE = 0.01
_MIN_TIME_S = 100e-6


@dataclass(frozen=True)
class StageSpread:
    """The spread of one stage's repeated times.

    Attributes:
        stage_index: 1-based; the loss is ``L+1``.
        stage_name: the stage's name (the loss function's name for the loss).
        repeats: how many repetitions the spread is taken over.
        fwd: ``(max − min) / median`` of the forward times (0 for fewer than 2 repetitions
            or a zero median).
        bwd: the same for the backward times.
        median_s: median forward time plus median backward time (seconds).
    """

    stage_index: int
    stage_name: str
    repeats: int
    fwd: float
    bwd: float
    median_s: float

    @property
    def spread(self) -> float:
        """The larger of the forward and backward spreads."""
        return max(self.fwd, self.bwd)


def _range_over_median(times: list[float]) -> float:
    med = statistics.median(times)
    if len(times) < 2 or med <= 0:
        return 0.0
    return (max(times) - min(times)) / med


def stage_spreads(rows: Iterable[ProfileRow]) -> tuple[StageSpread, ...]:
    """The spread of every stage's (and the loss's) times over its repetitions.

    Args:
        rows: a profile's rows, one per stage and repetition.

    Returns:
        One :class:`StageSpread` per stage index, in index order.
    """
    fwd: dict[int, list[float]] = defaultdict(list)
    bwd: dict[int, list[float]] = defaultdict(list)
    names: dict[int, str] = {}
    for r in rows:
        names.setdefault(r.stage_index, r.stage_name)
        fwd[r.stage_index].append(r.fwd_time_s)
        bwd[r.stage_index].append(r.bwd_time_s)
    return tuple(
        StageSpread(k, names[k], len(fwd[k]), _range_over_median(fwd[k]),
                    _range_over_median(bwd[k]),
                    statistics.median(fwd[k]) + statistics.median(bwd[k]))
        for k in sorted(names))


def warn_if_spread(spreads: tuple[StageSpread, ...], threshold: float | None, *,
                   what: str, stacklevel: int = 3) -> list[StageSpread]:
    """Warn when some stage's times spread more than ``threshold``.

    Args:
        spreads: the profile's spreads (:func:`stage_spreads`).
        threshold: the largest acceptable spread, e.g. 0.25; None never warns.

    Keyword Args:
        what: names the profile in the message (``"profile of GPT"``).
        stacklevel: passed to :func:`warnings.warn`, to point at the user's call.

    Returns:
        The stages named in the warning, worst first (empty when none is).
    """
    if threshold is None:
        return []
    total = sum(s.median_s for s in spreads)
    worst = sorted((s for s in spreads
                    if s.spread > threshold and s.median_s >= _MIN_TIME_S
                    and s.median_s >= _MIN_SHARE * total),
                   key=lambda s: s.spread, reverse=True)
    if not worst:
        return worst
    named = ", ".join(
        f"stage {s.stage_index} ({s.stage_name}) {s.spread:.0%} "
        f"({'forward' if s.fwd >= s.bwd else 'backward'})" for s in worst[:3])
    more = f" and {len(worst) - 3} more" if len(worst) > 3 else ""
    warnings.warn(
        f"{what}: stage times spread more than {threshold:.0%} over their repetitions "
        f"((max - min) / median): {named}{more}. The host was probably busy; the medians, "
        f"and plans made from them, may be off. Profile again on a quiet machine or with more "
        f"repeats, or pass spread_warning=None to silence this.",
        ChainplanWarning, stacklevel=stacklevel)
    return worst
