"""The measured profile: :class:`Profile`, the document ``chainplan.profile`` returns and every
planning call takes, and where profiles are written (:func:`default_profile_dir`).

The rows themselves are the Arrow schema's (:mod:`chainplan.schema`). This module never
imports torch: plans, frontiers and pictures of a stored profile work without it, and the
measuring modules (:mod:`chainplan.profiler.run`, :mod:`chainplan.profiler.hooks`,
:mod:`chainplan.towers.profile`) build on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainplan import _bind
from chainplan.graph.describe import ChainSplit
from chainplan.profiler.spread import StageSpread, stage_spreads
from chainplan.profiler.summary import format_bytes, stage_table
from chainplan.profilerow import ProfileRow
from chainplan.source import envelope
from chainplan.svg import svg_or_none

__all__ = ["FRONTIER_DEFAULTS", "Profile", "default_profile_dir"]

#: The options of :func:`chainplan.tradeoff.plot_frontier` left at their defaults, as the Go side
#: reads them: what a notebook draws for a profile.
FRONTIER_DEFAULTS: dict[str, Any] = {"slots": 0, "budgets": 0, "overhead": False, "title": ""}


@dataclass(frozen=True)
class Profile:
    """A measured profile, written to an Arrow file and (usually) stored in the database.

    Attributes:
        path: the Arrow IPC file.
        run_id: the run's id in the database, or None when not ingested.
        model_name: the name the profile was stored under.
        stage_names: the stages, in order (the loss excluded).
        rows: every measurement written to the file.
        seconds: wall time the profiling took (seconds).
        side_bytes: memory the side values of a model split from its graph hold through
            a step (bytes; counted in every operation's overheads); 0 for a Sequential.
        split: how a model split from its graph was cut (None for a Sequential).
        reused: whether ``profile()`` returned a stored profile of the same call instead
            of measuring (:mod:`chainplan.profiler.stored`).
        keep_logits: whether a language model's logits were kept beside its loss
            (``profile(..., keep_logits=True)``): the plans of this profile capture the
            model so when they run (:mod:`chainplan.graph.fuseloss`).
    """

    path: Path
    run_id: int | None
    model_name: str
    stage_names: tuple[str, ...]
    rows: tuple[ProfileRow, ...]
    seconds: float
    side_bytes: int = 0
    split: ChainSplit | None = field(default=None, compare=False)
    reused: bool = False
    keep_logits: bool = False

    @property
    def num_stages(self) -> int:
        return len(self.stage_names)

    @property
    def spread(self) -> tuple[StageSpread, ...]:
        """Per stage (the loss last), how far its repeated times spread: ``(max − min) /
        median`` of the forward and of the backward times (:mod:`chainplan.profiler.spread`)."""
        return stage_spreads(self.rows)

    @property
    def max_spread(self) -> float:
        """The largest forward or backward spread of any stage (0 for a single repetition)."""
        return max((s.spread for s in self.spread), default=0.0)

    def summary(self) -> str:
        """A readable stage table: per stage its name, median forward and backward times
        (ms) and sizes (out, saved, temporaries, parameters), the loss, and the totals."""
        return profile_summary(self)

    def __repr__(self) -> str:
        # The dataclass repr would print every row; name the profile instead.
        return (f"Profile(model={self.model_name!r}, stages={self.num_stages}, "
                f"run_id={self.run_id!r}, path={_short_path(Path(self.path))!r})")

    def chain_json(self) -> str:
        """The ``chainplan.chain/v1`` JSON the planner reads for this profile, for reading
        it: the stored run's chain, else the one the Go side builds from the Arrow file."""
        return _bind.chain(self._envelope())

    def _repr_svg_(self) -> str | None:
        """The budget-versus-time frontier in a notebook (what
        :func:`chainplan.tradeoff.plot_frontier` draws with its defaults); None (the text
        repr) when it cannot be drawn, e.g. for sizes not measured. Go reads the profile
        itself: the chain does not pass through Python."""
        return svg_or_none(lambda: _bind.plot_frontier(self._envelope(), FRONTIER_DEFAULTS))

    def _envelope(self) -> dict[str, Any]:
        return envelope(self, "Profile")


def default_profile_dir() -> Path:
    """Where profiles are written: ``profiles/`` next to the database (the folder of
    ``$CHAINPLAN_DB``, or ``~/.chainplan``, also when ``$CHAINPLAN_DB`` names a PostgreSQL
    store; the rule is the Go side's)."""
    return Path(_bind.data_dir()) / "profiles"


def profile_summary(profile: Profile) -> str:
    """A title line (model, stage count, run id, input size, file) and the stage table."""
    rows = profile.rows
    first = min(rows, key=lambda r: (r.stage_index, r.rep)) if rows else None
    where = f"run {profile.run_id}" if profile.run_id is not None else "not stored"
    n = profile.num_stages
    title = (f"Profile of {profile.model_name!r}: {n} stage{'' if n == 1 else 's'} + loss, "
             f"{where}, input {format_bytes(first.in_bytes if first else None)}, {profile.path}")
    return title + "\n" + stage_table(rows) + _split_lines(profile)


def _split_lines(profile: Profile) -> str:
    """For a model split from its graph: where the stages came from, the side values and
    what was merged because of branches."""
    split = profile.split
    if split is None:
        return ""
    lines = [f"stages split from the graph at module level {split.level}; module paths:"]
    lines += [f"{s.index:>4}  {', '.join(s.modules) or 'operations of forward'}"
              for s in split.stages]
    if split.side:
        lines.append(f"side values, held once per step ({format_bytes(profile.side_bytes)} "
                     "with their gradients, in every stage's fwd_tmp and bwd_tmp):")
        lines += [f"      {v.name} ({v.origin}): {v.dtype.removeprefix('torch.')} "
                  f"{list(v.shape)}, {format_bytes(v.nbytes)}" for v in split.side]
    lines += [f"note: {b}" for b in split.branches]
    return "\n" + "\n".join(lines)


def _short_path(path: Path) -> str:
    """The file name, with ``…/`` standing for its folder (the full path is ``.path``)."""
    return str(path) if path.parent == Path(".") else f"…/{path.name}"
