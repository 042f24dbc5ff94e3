"""Reading the arguments the user-facing calls share, each checked before any work with a
message naming the argument. This module never imports torch."""

from __future__ import annotations

import math

from chainplan import _bind
from chainplan.errors import ArgumentTypeError, PlanError

__all__ = ["bandwidth", "typed"]


def typed(value: object) -> str:
    """``value`` and its type, for messages: ``2.0 (float)``."""
    return f"{value!r} ({type(value).__name__})"


def bandwidth(value: object) -> float:
    """A link's bandwidth in bytes per second: a positive, finite number, or a string with
    the CLI's rule (``"12GB/s"``, ``"1.2e10"``; docs/CLI.md, "Sizes and bandwidths").

    Raises:
        ArgumentTypeError: neither a number nor a string.
        PlanError: not positive and finite, or a string that is no bandwidth.
    """
    if isinstance(value, str):
        return _bind.parse_bandwidth(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"bandwidth must be bytes per second (an int or a float) or a "
                                f"string such as '12GB/s' (got {typed(value)})")
    if not (math.isfinite(value) and value > 0):
        raise PlanError(f"bandwidth must be a positive, finite number of bytes per second "
                        f"(got {value!r})")
    return float(value)
