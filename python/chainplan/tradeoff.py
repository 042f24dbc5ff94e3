"""How memory buys time: :func:`frontier` (makespan at every budget) and :func:`min_budget`.

Both ask the Go planner in-process: the frontier comes from one run of rotor's dynamic
programme at the store-all peak (``rotor.SolveFrontier``: the table built for that budget
holds the optimal makespan at every smaller one too), the smallest budget from the
algorithm's own search. This module never imports torch: profiles, chain files and run ids
work without it; only ``bandwidth="auto"`` with no bandwidth recorded for the run measures
one (:func:`chainplan.arguments.bandwidth_or_auto`).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
from typing import TYPE_CHECKING, Any

from chainplan import _bind
from chainplan.algorithms import algorithms, check_algorithm
from chainplan.arguments import bandwidth_or_auto
from chainplan.errors import PlanError
from chainplan.plandoc import PlanDocument
from chainplan.profiler.document import Profile
from chainplan.profiler.summary import format_bytes
from chainplan.source import envelope
from chainplan.svg import write_svg

if TYPE_CHECKING:
    import pyarrow as pa  # optional: only Frontier.to_arrow needs it

__all__ = ["frontier", "min_budget", "plot_frontier", "chain_json", "Frontier", "FrontierPoint"]


@dataclasses.dataclass(frozen=True)
class FrontierPoint:
    """One step of the trade-off: from ``budget_bytes`` on (up to the next point's budget)
    the optimal makespan is ``makespan``.

    Attributes:
        budget_bytes: total activation memory, chain input included (bytes).
        makespan: the time of one training step at that budget (the chain's time unit:
            seconds for measured profiles).
        overhead: ``makespan / sum_time - 1``, the share of time spent recomputing.
        slots: the slot count that gives a plan at ``budget_bytes`` the frontier's unit, so
            that ``chainplan.plan(source, budget=p.budget_bytes, slots=p.slots)`` has this
            makespan (up to the last bits of the float sum).
    """

    budget_bytes: int
    makespan: float
    overhead: float
    slots: int


@dataclasses.dataclass(frozen=True)
class Frontier:
    """The whole budget-versus-makespan trade-off of a chain under one algorithm.

    Attributes:
        algo: ``rotor`` or ``revolve``.
        points: the budgets where the makespan drops, in increasing budget (and strictly
            decreasing makespan) order; the first is the smallest feasible budget, and for
            rotor the last is the store-all peak, with ``makespan == sum_time``.
        store_all_peak_bytes: the peak of the schedule that recomputes nothing.
        sum_time: the time of the chain without recomputation (forward + backward).
        slots, unit_bytes: the discretization, that of the store-all peak
            (``unit_bytes = store_all_peak_bytes // slots``), shared by every point.
        solve_ms: the planner's time (ms).
    """

    algo: str
    points: tuple[FrontierPoint, ...]
    store_all_peak_bytes: int
    sum_time: float
    slots: int
    unit_bytes: int
    solve_ms: float

    @classmethod
    def from_json(cls, text: str) -> Frontier:
        """Read the JSON the Go side returns (``rotor.Frontier``)."""
        doc = json.loads(text)
        unit = int(doc["unit_bytes"])
        # Every point below the store-all peak is a whole number of units, and a plan's unit
        # is floor(budget / slots) (DESIGN.md): budget // unit slots give back the same
        # unit, hence the same table. At the peak itself rotor returns store-all whatever
        # the grid.
        points = tuple(FrontierPoint(int(p["budget_bytes"]), float(p["makespan"]),
                                     float(p["overhead"]), max(1, int(p["budget_bytes"]) // unit))
                       for p in doc["points"] or ())
        return cls(algo=str(doc["algo"]), points=points,
                   store_all_peak_bytes=int(doc["store_all_peak_bytes"]),
                   sum_time=float(doc["sum_time"]), slots=int(doc["slots"]),
                   unit_bytes=int(doc["unit_bytes"]), solve_ms=float(doc["solve_ms"]))

    def point_at(self, budget_bytes: int) -> FrontierPoint | None:
        """The point in force at a budget (the last one at or below it), None below the first."""
        k = bisect.bisect_right([p.budget_bytes for p in self.points], budget_bytes)
        return self.points[k - 1] if k else None

    def to_pylist(self) -> list[dict[str, Any]]:
        """The points as dictionaries (``budget_bytes``, ``makespan``, ``overhead``, ``slots``)."""
        return [dataclasses.asdict(p) for p in self.points]

    def to_arrow(self) -> pa.Table:
        """The points as a :class:`pyarrow.Table`, one row per point."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.to_pylist(), schema=pa.schema([
            ("budget_bytes", pa.int64()), ("makespan", pa.float64()), ("overhead", pa.float64()),
            ("slots", pa.int64())]))

    def __str__(self) -> str:
        lines = [f"{self.algo} frontier: {len(self.points)} points, {self.slots} slots of "
                 f"{format_bytes(self.unit_bytes)}, no-recomputation time {self.sum_time:.6g}, "
                 f"store-all peak {format_bytes(self.store_all_peak_bytes)}",
                 f"{'budget_bytes':>16}  {'budget':>12}  {'makespan':>14}  {'overhead':>9}  "
                 f"{'slots':>7}"]
        lines += [f"{p.budget_bytes:>16}  {format_bytes(p.budget_bytes):>12}  "
                  f"{p.makespan:>14.6g}  {100 * p.overhead:>8.2f}%  {p.slots:>7}"
                  for p in self.points]
        return "\n".join(lines)


def frontier(source: Profile | int | str | os.PathLike[str], *, algo: str = "rotor",
             slots: int | None = None) -> Frontier:
    """The optimal makespan at every budget, from the smallest feasible one to the store-all peak.

    Every point shares the unit of the store-all peak (``peak // slots`` bytes). A plan at
    a point's budget with the default grid uses that budget's own, finer unit, and the
    sizes round differently, so its makespan may differ from the point's either way; the
    point's ``slots`` reproduce it. Likewise :func:`min_budget`, searched with each
    budget's own unit, may lie a little on either side of the first point. With ``slots``
    at least the store-all peak in bytes every unit is one byte and all of them agree
    exactly.

    Args:
        source: what :func:`chainplan.plan` takes: a
            :class:`~chainplan.profiler.run.Profile`, a stored run id, a chain file
            (``chainplan.chain/v1`` JSON), or a profile file (Arrow).

    Keyword Args:
        algo: ``rotor`` (default) or ``revolve``.
        slots: memory slots of the discretization (default: 500).

    Returns:
        The :class:`Frontier`; ``print()`` it for a table.

    Raises:
        PlanError: an algorithm without a frontier, a bad ``slots`` or ``source``.
        SchemaError: the chain or profile is invalid.
        NotFoundError: no stored run has that id.
    """
    if not isinstance(algo, str) or not getattr(algorithms().get(algo), "frontier", False):
        names = [a.name for a in algorithms().values() if a.frontier]
        listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        towers = ""
        if getattr(algorithms().get(algo), "family", None) == "multichain":
            # Towers joined at the loss have a frontier, the CLI's: say where, not only no.
            towers = (" (of one chain; the frontier of towers joined at the loss is multichain's: "
                      "chainplan frontier --run RUN)")
        raise PlanError(f'no frontier for algorithm "{algo}": only {listed} have one{towers}')
    req = {"algo": algo, "slots": _slots(slots)}
    return Frontier.from_json(_bind.frontier(envelope(source, "frontier"), req))


def min_budget(source: Profile | int | str | os.PathLike[str], *, algo: str = "rotor",
               slots: int | None = None, segments: int = 0,
               bandwidth: float | str | None = None) -> int:
    """The smallest budget (bytes, chain input included) at which ``algo`` finds a plan.

    ``chainplan.plan(source, budget=min_budget(source, ...), ...)`` succeeds with the same
    options, as does ``budget="min"``.

    Args:
        source: as for :func:`frontier`.

    Keyword Args:
        algo: any algorithm :func:`chainplan.plan` knows (default: ``rotor``).
        slots: memory slots of the discretization (default: the algorithm's own).
        segments: segment count for ``sequential`` (default: 0, the best that fits).
        bandwidth: host-device bandwidth of the offloading algorithms, as for
            :func:`chainplan.plan` (this needs torch).

    Raises:
        PlanError: an unknown algorithm or a bad option.
        SchemaError: the chain or profile is invalid.
        NotFoundError: no stored run has that id.
    """
    check_algorithm(algo, segments=segments, bandwidth=bandwidth is not None)
    req: dict[str, Any] = {"algo": algo, "slots": _slots(slots), "segments": segments}
    if bandwidth is not None:
        # plan()'s rule, in one place: numbers, sizes per second, or "auto" (the bandwidth
        # recorded with the run, else measured on its device).
        req["bandwidth"] = bandwidth_or_auto(bandwidth, source)
    return _bind.min_budget(envelope(source, "min_budget"), req)


def plot_frontier(source: Profile | int | str | os.PathLike[str], *,
                  bandwidth: float | str | None = None, budgets: int = 0,
                  slots: int | None = None, overhead: bool = False,
                  plan: PlanDocument | None = None,
                  title: str = "", path: str | os.PathLike[str] | None = None) -> str:
    """Draw the budget-versus-time trade-off of a chain, as ``chainplan plot frontier`` does.

    rotor's and revolve's optimal makespan at every budget, ``checkpoint_sequential`` at each
    segment count and store-all; with a ``bandwidth``, POFO and offload-only at a few
    budgets (each takes a fraction of a second to seconds on 20 to 70 stages). The picture is
    made by the Go side (``internal/plot``), the same as the CLI's.

    Args:
        source: as for :func:`frontier`.

    Keyword Args:
        bandwidth: host-device bandwidth, as for :func:`chainplan.plan` (adds the offloading
            algorithms; this needs torch for ``"auto"``).
        budgets: budgets at which each offloading algorithm is solved (default: 0, six).
        slots: memory slots of the rotor and revolve frontiers (default: 500).
        overhead: draw the overhead over no recomputation instead of the makespan.
        plan: a plan to mark on the picture.
        title: the picture's title (default: "Budget versus time").
        path: when given, the SVG is also written there (a ``.svg`` file).

    Returns:
        The SVG document.

    Raises:
        PlanError: a bad option or ``path``.
        SchemaError: the chain or profile is invalid.
        NotFoundError: no stored run has that id.
    """
    if isinstance(budgets, bool) or not isinstance(budgets, int) or budgets < 0:
        raise PlanError(f"budgets must be a non-negative integer (got {budgets!r})")
    opts: dict[str, Any] = {"slots": _slots(slots), "budgets": budgets, "overhead": bool(overhead),
                            "title": title}
    if bandwidth is not None:
        opts["bandwidth"] = bandwidth_or_auto(bandwidth, source)
    if plan is not None:
        opts["plan"] = plan.raw
    svg = _bind.plot_frontier(envelope(source, "plot_frontier"), opts)
    return write_svg(path, svg)


def _slots(slots: int | None) -> int:
    """The request's slots: 0 asks the Go side for the algorithm's default."""
    if slots is None:
        return 0
    if isinstance(slots, bool) or not isinstance(slots, int) or slots <= 0:
        raise PlanError(f"slots must be a positive integer, or None for the algorithm's default "
                        f"(got {slots!r})")
    return slots


def chain_json(source: Profile | int | str | os.PathLike[str],
               caller: str = "chain_json") -> str:
    """The ``chainplan.chain/v1`` JSON of any source :func:`chainplan.plan` accepts, for
    reading it (Go reads the run or the file); ``caller`` names the function asking, in
    errors."""
    return _bind.chain(envelope(source, caller))
