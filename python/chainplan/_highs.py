"""Which HiGHS program the Go planners run: the one that came with this installation.

MadPipe's scheduling phase runs the HiGHS MILP solver as a separate program. The Go side
loaded into this interpreter cannot tell which Python environment it was installed in (its
executable is the interpreter, symlinks resolved), and it sees the process environment as
it was when it was loaded; so the Python side resolves the program at each planning call
and passes it on (``pybind.UseHighs``): ``$CHAINPLAN_HIGHS`` when set, else the program of
the ``highsbox`` package this interpreter imports (a dependency of chainplan). Only when
neither is there does the Go side search by itself (``planner/milp.FindHighs``: PATH, then
the development places), and a plan made without any solver says so (``plan.fallback``,
:class:`~chainplan.errors.MissingSolverWarning`). This module never imports torch.
"""

from __future__ import annotations

import importlib
import os

__all__: list[str] = []

ENV = "CHAINPLAN_HIGHS"


def resolve() -> tuple[str, str]:
    """The HiGHS program and where it came from, or ``("", "")`` to let Go search."""
    named = os.environ.get(ENV, "")
    if named:
        return named, ENV
    try:
        highsbox = importlib.import_module("highsbox")
    except ImportError:
        return "", ""
    path = str(highsbox.highs_bin_path())
    return path, f"the highsbox package at {os.path.dirname(str(highsbox.__file__))}"
