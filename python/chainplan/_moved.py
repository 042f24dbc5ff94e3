"""Old module paths and names kept importable after a rename, each warning with the new one.

A module that moved leaves a shim at its old path that calls :func:`warn_moved` and
re-exports the new module's names; a renamed attribute becomes a property that calls
:func:`warn_renamed`. Both warn with :class:`DeprecationWarning` attributed to the user's
line (the ``import`` or the attribute read), so that ``python -W error::DeprecationWarning``
and pytest point at the code to change.
"""

from __future__ import annotations

import warnings

__all__: list[str] = []


def warn_moved(old: str, new: str) -> None:
    """Warn that module ``old`` is now ``new`` (called from the shim left at ``old``)."""
    # 1: here, 2: the shim, 3: the user's import (warnings skips the import machinery's
    # frames when it counts).
    warnings.warn(f"{old} moved to {new}; import it from there ({old} will be removed)",
                  DeprecationWarning, stacklevel=3)


def warn_renamed(old: str, new: str) -> None:
    """Warn that ``old`` is now called ``new`` (called from the alias's property or function,
    so the warning names the caller's line)."""
    warnings.warn(f"{old} is renamed {new} ({old} will be removed)", DeprecationWarning,
                  stacklevel=3)
