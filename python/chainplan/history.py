"""The history in the store: SQL over it (:func:`query`), its runs (:func:`runs`), and the
plans against their executions.

:func:`plot_history` is ``chainplan plot history`` for Python: predicted against measured peak
and step time for the stored plans that ran, of one run (a profile) or of every run of a
model. The picture is made by the Go side (``internal/plot``), the same as the CLI's.
"""

from __future__ import annotations

import math
import os
from typing import Any

from chainplan import _bind
from chainplan.errors import PlanError
from chainplan.profiler.document import Profile
from chainplan.svg import write_svg

__all__ = ["plot_history", "query", "runs"]


def plot_history(run: Profile | int | None = None, *, model: str = "",
                 path: str | os.PathLike[str] | None = None) -> str:
    """Draw predicted against measured peak and time of the stored plans that ran.

    Plans run with :func:`chainplan.measure` (or ``Checkpointed``'s first steps) have
    executions; the others are left out.

    Args:
        run: a stored profile, or a run id (default: the newest run, unless ``model`` is
            given).

    Keyword Args:
        model: the plans of every run of this model name instead of one run's.
        path: when given, the SVG is also written there (a ``.svg`` file).

    Returns:
        The SVG document.

    Raises:
        PlanError: both ``run`` and ``model`` given, a profile that was not stored, a bad
            ``path``, or a selection with no executed plan (the message says what it
            selected).
        NotFoundError: no stored run has that id.
    """
    if run is not None and model:
        raise PlanError("give one of run and model, not both")
    run_id = 0
    if isinstance(run, bool):
        raise PlanError(f"run must be a Profile or a run id (got {run!r})")
    if isinstance(run, int):
        if run <= 0:
            raise PlanError(f"run ids start at 1 (got {run})")
        run_id = run
    elif run is not None:
        stored = getattr(run, "run_id", None)
        if not isinstance(stored, int):
            raise PlanError("the profile was not stored (profile(..., ingest=False)): it has "
                            "no plans to show; pass a stored profile or a run id")
        run_id = stored
    elif not model:
        newest = _bind.runs(model_name="", limit=1)
        if not newest:
            raise PlanError("the store holds no run yet: profile a model first")
        run_id = int(newest[0]["run_id"])
    return write_svg(path, _bind.plot_history(run_id, model))


def query(sql: str, *params: int | float | str | bool | None) -> Any:
    """Run one read-only SQL statement on the database and return a ``pyarrow.Table``.

    Each of ``params`` binds one placeholder: ``$1``, ``$2``, ... are the first, second,
    ... parameter on both databases (SQLite also takes ``?``, the next one):
    ``chainplan.query(sql, 3, "resnet50")`` binds 3 to ``$1`` and ``"resnet50"`` to ``$2``
    (docs/sql.md has example queries). Parameters are ints, finite floats, strings,
    booleans (bound as 1 and 0, as the store keeps them) or None.

    The database is ``$CHAINPLAN_DB`` (a SQLite file, or a PostgreSQL store named by a
    ``postgres://`` or ``host=... dbname=...`` DSN) or ``~/.chainplan/chainplan.db``;
    docs/sql.md lists the tables, views and example queries, which run unchanged on both.
    A statement that would write is refused (:class:`~chainplan.errors.QueryError`) and
    changes nothing; so are several statements (a trailing ``;`` and comments are fine)
    and parameters that do not match the placeholders one for one.

    Raises:
        TypeError: a parameter of another type.
        ValueError: a float that is not finite.
    """
    import pyarrow as pa

    for i, p in enumerate(params, 1):
        if p is not None and not isinstance(p, (int, float, str)):  # bool is an int
            raise TypeError(f"query parameter {i}: {type(p).__name__} {p!r} is no value SQL binds "
                            "(want an int, a float, a str, a bool or None)")
        if isinstance(p, float) and not math.isfinite(p):
            raise ValueError(f"query parameter {i}: {p} is not a finite number")
    data = _bind.query(sql, list(params))
    return pa.ipc.open_file(pa.py_buffer(data)).read_all()


def runs(*, model: str = "", limit: int = 0) -> list[dict[str, Any]]:
    """The stored profiles (runs), newest first.

    Keyword Args:
        model: only the runs of this model name (default: all).
        limit: at most this many (default: 0, all).

    Returns:
        One dict per run: ``run_id``, ``model_name``, ``model_signature``, ``created_at``,
        ``device``, ``dtype``, ``torch_version``, ``num_stages``, ``batch_size``,
        ``input_shape`` (a list, empty when not recorded), ``fwd_time_s``, ``bwd_time_s``
        (totals) and ``source_path``.
    """
    return _bind.runs(model_name=model, limit=limit)
