"""The one place Python looks at what a user passed as a source: :func:`envelope` turns a
:class:`~chainplan.profiler.document.Profile`, a stored run id or a path into the source
envelope every family's Go entry takes (``service.Source``: docs/ARCHITECTURE.md, "One
source envelope"), by its type alone.

A stored ``Profile`` is sent as its run id, an unstored one as its file; a path is sent as
it is, and Go tells a profile, a chain and a bundle apart by their content. Go reads every
source itself, once (``service.Resolve``): no chain travels Go → Python → Go, and the
errors of a bad source (a run that does not exist, a file that is missing or unreadable,
none or several given) are Go's, the same for every family and the CLI. This module never
imports torch (``tests/test_source_envelope.py`` holds every other module of the package
to not dispatching on a source's type).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from chainplan import _bind
from chainplan.errors import ArgumentTypeError, PlanError

__all__ = ["Profiled", "envelope", "run_id_of"]


@runtime_checkable
class Profiled(Protocol):
    """A measured profile (:class:`~chainplan.profiler.document.Profile`), named by what
    its envelope reads, so that this module sits below the profile's (which reads its own
    chain and draws its frontier through :func:`envelope`)."""

    @property
    def run_id(self) -> int | None: ...

    @property
    def path(self) -> Path: ...


def envelope(source: object, caller: str) -> dict[str, Any]:
    """The source envelope of ``source`` (a Profile, a stored run id, or the
    path of a profile, chain or bundle file), with the database a stored run is read from;
    ``caller`` names the function asking, in errors.

    Raises:
        ArgumentTypeError: ``source`` is of none of those types.
        PlanError: a run id below 1.
    """
    run_id = run_id_of(source, f"{caller}()")
    if run_id is not None:
        return {"run_id": run_id, **_bind.database()}
    if isinstance(source, Profiled):
        return {"profile_path": str(source.path)}
    if isinstance(source, (str, os.PathLike)):
        return {"path": os.fspath(source)}
    raise ArgumentTypeError(f"{caller}() takes a Profile, a run id or a chain file (or a "
                            f"profile or bundle file) (got {source!r} ({type(source).__name__}))")


def run_id_of(source: object, caller: str) -> int | None:
    """The stored run ``source`` names (a stored Profile's run, or a run id), None
    for a source that is not stored; for what needs a stored run besides the plan
    (``bandwidth="auto"`` records its measurement with it). ``caller`` names what asks
    (``"plan()"``), in errors.

    Raises:
        PlanError: a run id below 1.
    """
    if isinstance(source, Profiled):
        return source.run_id
    if isinstance(source, int) and not isinstance(source, bool):
        if source < 1:
            raise PlanError(f"{caller}: a run id is a positive integer (got {source})")
        return source
    return None
