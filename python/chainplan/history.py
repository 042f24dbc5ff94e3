"""The history in the store: SQL over it (:func:`query`), its runs (:func:`runs`), and the
plans against their executions.

:func:`plot_history` is ``chainplan plot history`` for Python: predicted against measured peak
and step time for the stored plans that ran, of one run (a profile) or of every run of a
model. The picture is made by the Go side (``internal/plot``), the same as the CLI's.
"""

from __future__ import annotations

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


def query(sql: str) -> Any:
    """Run a read-only SQL query on the database and return a ``pyarrow.Table``.

    The database is ``$CHAINPLAN_DB`` (a SQLite file, or a PostgreSQL store named by a
    ``postgres://`` DSN) or ``~/.chainplan/chainplan.db``; docs/sql.md lists the tables,
    views and example queries, which run unchanged on both. A statement that would write
    is refused (:class:`~chainplan.errors.QueryError`) and changes nothing.
    """
    import pyarrow as pa

    data = _bind.query(sql)
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
